package kafka

import (
	"slices"
	"testing"

	"storebench/internal/target"
)

// The target is the managed Kafka server's, selected by kafka://, and
// offers a log only: the workloads that need key-value records or SQL
// show it n/a.
func TestRegistered(t *testing.T) {
	i, err := target.Lookup("kafka://127.0.0.1:9092")
	if err != nil || i.Name != name || i.Server != "kafka" || i.Kind != "server" || i.Open == nil {
		t.Fatalf("kafka:// selects %+v, %v", i, err)
	}
	if !slices.Equal(i.Provides, target.Caps{target.Log}) {
		t.Errorf("provides %v, want the log only", i.Provides)
	}
	if why := i.Provides.CannotRun(target.Caps{target.KeyValue}); why != "no single key-value writes" {
		t.Errorf("a key-value step: %q", why)
	}
}

func TestBrokers(t *testing.T) {
	for uri, want := range map[string][]string{
		"kafka://127.0.0.1:9093":        {"127.0.0.1:9093"},
		"kafka://h1:1,h2:2":             {"h1:1", "h2:2"},
		"kafka://localhost":             {"localhost:9092"},
		"kafka://127.0.0.1:9093/ignore": {"127.0.0.1:9093"},
	} {
		got, err := Brokers(uri)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", uri, got, err, want)
		}
	}
	for _, uri := range []string{"redis://127.0.0.1:1", "kafka://u:p@127.0.0.1:1", "kafka://"} {
		if got, err := Brokers(uri); err == nil {
			t.Errorf("%s: %v accepted", uri, got)
		}
	}
}
