package tripgen

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"storebench/internal/server"
)

// MainName is the in-process main the trip-builder workload starts the
// generator with: `storebench server-main tripgen -config JSON ...`, a
// process of its own, as the seed insists ("two modules should be run in
// separate processes"), so its CPU is not the consumer's.
const MainName = "tripgen"

func init() { server.RegisterMain(MainName, Main) }

// Transports the generator can send over.
const (
	TransportSocket = "socket"
	TransportKafka  = "kafka"
)

// KafkaSinkFactory opens a Kafka sink; set by the package that links
// the Kafka client in (kept out of this package so the generator's core
// needs no client).
var KafkaSinkFactory func(ctx context.Context, brokers, topic string, partitions int, acks string) (Sink, error)

// Main runs the generator:
//
//	tripgen -config JSON -total N (-connect HOST:PORT | -kafka BROKERS -topic T -partitions P -acks all|leader|none)
//
// It exits 0 after sending every tick, 1 on a send error, 2 on bad usage.
// It stops when its parent dies (SIGKILL from the kernel) or on SIGTERM.
func Main(args []string) int {
	fs := flag.NewFlagSet("tripgen", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	cfgJSON := fs.String("config", "", "generator configuration (JSON of tripgen.Config)")
	total := fs.Uint64("total", 0, "ticks to send")
	connect := fs.String("connect", "", "consumer's loopback address (socket transport)")
	brokers := fs.String("kafka", "", "Kafka bootstrap brokers (kafka transport)")
	topic := fs.String("topic", "", "Kafka topic")
	partitions := fs.Int("partitions", 1, "Kafka partitions of the topic")
	acks := fs.String("acks", "leader", "Kafka producer acks: all, leader or none")
	delay := fs.Duration("start-delay", 20*time.Millisecond, "time between connecting and the first tick's due time")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(*cfgJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "tripgen: -config:", err)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "tripgen: -config:", err)
		return 2
	}
	if (*connect == "") == (*brokers == "") {
		fmt.Fprintln(os.Stderr, "tripgen: give exactly one of -connect and -kafka")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var sink Sink
	if *connect != "" {
		conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", *connect)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tripgen:", err)
			return 1
		}
		sink = NewSocketSink(conn)
	} else {
		if KafkaSinkFactory == nil {
			fmt.Fprintln(os.Stderr, "tripgen: this binary has no Kafka client linked in")
			return 1
		}
		var err error
		if sink, err = KafkaSinkFactory(ctx, *brokers, *topic, *partitions, *acks); err != nil {
			fmt.Fprintln(os.Stderr, "tripgen:", err)
			return 1
		}
	}
	s, err := New(cfg, time.Now().Add(*delay).UnixNano())
	if err != nil {
		fmt.Fprintln(os.Stderr, "tripgen:", err)
		return 2
	}
	sent, err := Run(ctx, s, *total, sink)
	if cerr := sink.Close(); err == nil && cerr != nil && cerr != io.EOF {
		err = cerr
	}
	fmt.Fprintf(os.Stderr, "tripgen: sent %d of %d ticks in %s\n", sent, *total, time.Duration(time.Now().UnixNano()-s.StartNs).Round(time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tripgen:", err)
		return 1
	}
	return 0
}
