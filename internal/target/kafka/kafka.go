// Package kafka is the storebench target for Apache Kafka's log, through
// twmb/franz-go.
//
// Its handle offers conn.Kafka (the brokers): the workloads make their
// own producers and consumers on it. It offers no key-value records and
// no SQL: the workloads that need them show it n/a. The durability
// workload produces each record to a topic and reads the topic back after
// a crash. The managed server (package server/kafka) maps the study's
// class onto the broker's flush policy (sync: log.flush.interval.messages=1);
// the client has nothing of its own to set for it.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the franz-go version in go.mod.
const moduleVersion = "v1.22.2"

const (
	name = "kafka"
	// timeout bounds Open's check that a broker answers.
	timeout = 4 * time.Second
)

func init() {
	target.Register(target.Info{
		Name:     name,
		Title:    "Apache Kafka (log)",
		Version:  "franz-go " + moduleVersion,
		Server:   "kafka",
		Schemes:  []string{"kafka"},
		Provides: target.Caps{target.Log},
		Open:     targetkit.Closer(Open),
	})
}

// Store is the brokers of a Kafka cluster that answered. It holds no
// connection: the workloads' clients are their own.
type Store struct {
	brokers  []string
	settings map[string]string
}

var _ conn.Kafka = (*Store)(nil)

// Open checks that a broker of o.URI (kafka://host:port[,host:port...])
// answers.
func Open(o target.Options) (*Store, error) { return targetkit.OpenServer(name, o, open) }

func open(o target.Options) (*Store, error) {
	if _, err := targetkit.IsSync(o.Durability); err != nil {
		return nil, err
	}
	if len(o.Extra) > 0 {
		for k := range o.Extra {
			return nil, fmt.Errorf("unknown option %q (kafka takes none)", k)
		}
	}
	brokers, err := Brokers(o.URI)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DialTimeout(timeout), kgo.RetryTimeout(timeout))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The client does not give up on a server that accepts and never
	// answers within the bound (its handshake waits longer, whatever
	// the context): the check waits for it no longer than the bound,
	// and the client is closed in the background.
	pinged := make(chan error, 1)
	go func() {
		pinged <- cl.Ping(ctx)
		cl.Close()
	}()
	select {
	case err = <-pinged:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return nil, target.NoAnswer(err, timeout)
	}
	return &Store{brokers: brokers, settings: map[string]string{
		"server":     redact.Text(o.URI),
		"client":     "franz-go " + moduleVersion + " (each workload makes its own producers and consumers)",
		"durability": "the broker's: the managed server maps sync onto log.flush.interval.messages=1 (each message fsynced), async onto Kafka's default (the OS flushes the log); producers ask acks=all",
	}}, nil
}

// Brokers are the host:port addresses a kafka:// URI names (a list
// separated by commas; port 9092 where none is given).
func Brokers(uri string) ([]string, error) {
	u, err := targetkit.ParseURI(uri, "kafka://host:port")
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		return nil, errors.New("credentials given, but storebench's Kafka client speaks PLAINTEXT without SASL")
	}
	var out []string
	for _, hp := range strings.Split(u.Host, ",") {
		if hp == "" {
			continue
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			host, port = hp, "9092"
		}
		if host == "" {
			host = "127.0.0.1"
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	if len(out) == 0 {
		return nil, errors.New("no broker given (kafka://host:port)")
	}
	return out, nil
}

// KafkaBrokers implements conn.Kafka.
func (s *Store) KafkaBrokers() []string { return append([]string(nil), s.brokers...) }

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close holds nothing to close.
func (s *Store) Close() error { return nil }
