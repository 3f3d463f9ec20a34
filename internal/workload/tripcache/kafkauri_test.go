package tripcache

import (
	"strings"
	"testing"

	"storebench/internal/study"
	"storebench/internal/sweep"
)

// A study file is data: it names no address beyond its targets and
// hosts, so an external Kafka (kafka_uri) comes from the command line
// (--set) or $STOREBENCH_KAFKA_URI, never from the file or its scales.
func TestKafkaURIOnlyFromTheCommandLine(t *testing.T) {
	decode := func(src, scale string, sets ...string) error {
		t.Helper()
		s, err := study.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Set: sets, Scale: scale}); err != nil {
			return err
		}
		_, err = TripCache{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
		return err
	}
	inFile := strings.Replace(smallStudy, "rate: 3000", "rate: 3000\n      transport: kafka\n      kafka_uri: kafka://kafka.example:9092", 1)
	err := decode(inFile, "")
	if err == nil || !strings.HasPrefix(err.Error(), "t.yaml:11: workloads.tripcache.params.kafka_uri: ") || !strings.Contains(err.Error(), "--set tripcache.kafka_uri=") {
		t.Fatalf("kafka_uri in the file: %v", err)
	}
	if err := decode(smallStudy+"scales:\n  far: {tripcache.kafka_uri: \"kafka://kafka.example:9092\"}\n", "far"); err == nil || !strings.Contains(err.Error(), "kafka_uri") {
		t.Fatalf("kafka_uri in a scale: %v", err)
	}
	// The command line may name it, and may replace the file's.
	if err := decode(smallStudy, "", "tripcache.kafka_uri=kafka://127.0.0.1:9092"); err != nil {
		t.Fatalf("--set tripcache.kafka_uri: %v", err)
	}
	if err := decode(inFile, "", "tripcache.kafka_uri=kafka://127.0.0.1:9092"); err != nil {
		t.Fatalf("--set over the file's kafka_uri: %v", err)
	}
	if err := decode(smallStudy, "", "tripcache.kafka_uri=-oops"); err == nil {
		t.Fatal("a kafka_uri starting with '-' accepted")
	}
}
