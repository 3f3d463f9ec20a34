// Package tripcache is the trip-builder study of seed 004: a stream of
// GPS ticks (package tripgen, in a process of its own) arrives over a
// loopback TCP socket or a Kafka topic, and a consumer builds trips in a
// cache as the ticks come: for each tick it creates the trip (one cache
// operation) or finds it and updates or completes it (two). The question
// is whether a disk-backed store keeps up as a high-throughput cache, and
// the answer is the highest tick rate it sustains (the core's rate
// search) and what limits it.
//
// The consumer reads ticks into a bounded in-process queue (one channel
// per processing goroutine, a tick's goroutine chosen by its trip so a
// trip's ticks are applied in order) whose length is sampled every
// second: the seed's saturation indicator. Every completed trip is read
// back and compared with what the generator produced (ticks, start, end,
// distance); a lost or duplicated tick fails the run.
package tripcache

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"storebench/internal/results"
	kafkaserver "storebench/internal/server/kafka"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
	"storebench/internal/workload/tripcache/tripgen"
)

func init() { workload.Register(TripCache{}) }

// Params of the workload (the seed's names in brackets).
type Params struct {
	// Transports: "socket" (the seed's default), "kafka", or both; each
	// is a phase of its own.
	Transport string `yaml:"transport" json:"transport"`
	// Rate is the phase's own offered rate in ticks per second
	// [packet.size]; the rate search offers its own.
	Rate     float64        `yaml:"rate" json:"rate" range:"0..1e8"`
	Duration study.Duration `yaml:"duration" json:"duration" range:"1s..24h"`
	// Sensors, TripsDayLimit and Multiplier shape the stream
	// [trips.day.limit, trips.day.multiplier]; MinTicks and MaxTicks
	// bound a trip's length.
	Sensors       study.Count `yaml:"sensors" json:"sensors" range:"1..1e9"`
	TripsDayLimit study.Count `yaml:"trips_day_limit" json:"trips_day_limit" range:"1..1e9"`
	Multiplier    study.Count `yaml:"multiplier" json:"multiplier" range:"1..1e6"`
	MinTicks      int64       `yaml:"min_ticks" json:"min_ticks" range:"2..1e6"`
	MaxTicks      int64       `yaml:"max_ticks" json:"max_ticks" range:"2..1e6"`
	// Rounds, when more than 0, sets the length of the stream (each
	// trial's included) in rounds of the trips under way instead of in
	// time: rounds × sensors × multiplier ticks, whatever the rate, so
	// that every trial reaches the same depth into the stream (the
	// first round creates every trip, later ones find and update them).
	// 0: the stream lasts duration (the rate search's trial duration).
	Rounds float64 `yaml:"rounds" json:"rounds" range:"0..1e6"`
	// Queue bounds the consumer's in-process queue (ticks, all
	// processing goroutines together).
	Queue int `yaml:"queue" json:"queue" range:"1..1e8"`
	// LateAfter: a tick whose processing starts this long after it was
	// due counts as late (the per-second late count is the rate search's
	// backlog signal).
	LateAfter study.Duration `yaml:"late_after" json:"late_after" range:"1ms..1h"`
	// Grace is how long after the stream's last tick was due the
	// consumer keeps reading before it stops (an overloaded consumer
	// must not stretch a trial without bound).
	Grace study.Duration `yaml:"grace" json:"grace" range:"0s..1h"`
	// Kafka: bootstrap brokers of an external Kafka ("" starts the
	// managed one), the topic's partitions and the producer's acks.
	KafkaURI        string `yaml:"kafka_uri" json:"kafka_uri"`
	KafkaPartitions int    `yaml:"kafka_partitions" json:"kafka_partitions" range:"1..1024"`
	KafkaAcks       string `yaml:"kafka_acks" json:"kafka_acks"`
}

// Defaults: 1000 trips under way (100 sensors cloned 10 times) of 5 to
// 30 ticks, so that within a trial of a few seconds at a few thousand
// ticks per second most ticks find their trip (get, then put) and
// thousands of trips complete and are verified. The seed's 300M trips
// are reached with sensors and multiplier; a tick then comes back to
// the same trip only every sensors×multiplier/rate seconds.
func defaults() Params {
	return Params{Transport: "socket", Rate: 2000, Duration: study.Duration(10 * time.Second),
		Sensors: 100, TripsDayLimit: 1_000_000, Multiplier: 10, MinTicks: 5, MaxTicks: 30,
		Queue: 10000, LateAfter: study.Duration(10 * time.Millisecond), Grace: study.Duration(5 * time.Second),
		KafkaPartitions: 4, KafkaAcks: "leader"}
}

func (p Params) transports() []string { return strings.Split(p.Transport, ",") }

// streamTime is how long a stream of Rounds rounds lasts at rate (at
// least a second, the rate search's shortest trial).
func (p Params) streamTime(rate float64) time.Duration {
	ticks := p.Rounds * float64(p.Sensors) * float64(p.Multiplier)
	return max(time.Second, time.Duration(ticks/rate*float64(time.Second)))
}

func (p Params) genConfig(seed int64, rate float64) tripgen.Config {
	return tripgen.Config{Seed: seed, Rate: rate, Sensors: int64(p.Sensors), TripsDayLimit: int64(p.TripsDayLimit),
		Multiplier: int64(p.Multiplier), MinTicks: p.MinTicks, MaxTicks: p.MaxTicks}
}

// TripCache implements workload.Workload.
type TripCache struct{}

func (TripCache) Name() string { return "tripcache" }
func (TripCache) Describe() string {
	return "seed 004: GPS ticks from a generator process over a socket or Kafka build trips in a cache (find, then create/update/complete); highest sustainable tick rate"
}

func (TripCache) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := defaults()
	if err := study.DecodeParams(s.File, e.Params, "workloads.tripcache.params", &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads.tripcache.params." + field, Msg: fmt.Sprintf(format, args...)}
	}
	seen := map[string]bool{}
	for _, t := range p.transports() {
		if t != tripgen.TransportSocket && t != tripgen.TransportKafka {
			return nil, bad("transport", "%q: want socket, kafka or socket,kafka", t)
		}
		if seen[t] {
			return nil, bad("transport", "%q given twice", t)
		}
		seen[t] = true
	}
	// A study file is data: it reaches no address but its targets' and
	// hosts'. An external Kafka is the user's to name, on the command line
	// (--set tripcache.kafka_uri=…) or in $STOREBENCH_KAFKA_URI.
	if p.KafkaURI != "" {
		if !s.SetOnCommandLine("workloads.tripcache.params.kafka_uri") {
			return nil, bad("kafka_uri", "%q: a study file may not name an address to connect to beyond its targets and hosts: give it with --set tripcache.kafka_uri=… or $STOREBENCH_KAFKA_URI", p.KafkaURI)
		}
		if strings.HasPrefix(p.KafkaURI, "-") || strings.ContainsFunc(p.KafkaURI, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, bad("kafka_uri", "%q: want kafka://host:port[,host:port…]", p.KafkaURI)
		}
	}
	if err := p.genConfig(s.Seed, p.Rate).Validate(); err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return nil, bad(field, "%s", msg)
	}
	switch {
	case p.Duration < study.Duration(time.Second):
		return nil, bad("duration", "want at least 1s")
	case p.Queue < 1 || p.Queue > 1e8:
		return nil, bad("queue", "want 1..1e8 ticks")
	case p.LateAfter <= 0:
		return nil, bad("late_after", "want a positive duration")
	case p.Grace < 0:
		return nil, bad("grace", "must not be negative")
	case p.KafkaPartitions < 1 || p.KafkaPartitions > 1024:
		return nil, bad("kafka_partitions", "want 1..1024")
	case p.KafkaAcks != "all" && p.KafkaAcks != "leader" && p.KafkaAcks != "none":
		return nil, bad("kafka_acks", "%q: want all, leader or none", p.KafkaAcks)
	}
	return json.Marshal(p)
}

// Plan is one step per transport: the stream at the phase's own rate,
// from an empty cache, open loop so the rate search can take it over.
func (TripCache) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var steps []workload.Step
	for _, t := range p.transports() {
		steps = append(steps, workload.Step{Workload: "tripcache", Phase: t, N: int64(p.Sensors) * int64(p.Multiplier),
			Fresh: true, Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(),
			Requires: target.Caps{target.KeyValue}, OpenLoop: true, Rate: p.Rate})
	}
	return steps, nil
}

// Servers: a Kafka step with no Kafka named (kafka_uri or
// $STOREBENCH_KAFKA_URI) starts the managed Kafka in the worker, which
// the coordinator installs first if need be.
func (TripCache) Servers(st workload.Step) []string {
	var p Params
	if st.Phase != tripgen.TransportKafka || json.Unmarshal(st.Params, &p) != nil {
		return nil
	}
	if p.KafkaURI != "" || os.Getenv("STOREBENCH_KAFKA_URI") != "" {
		return nil
	}
	return []string{kafkaserver.Name}
}

func (TripCache) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, err
	}
	c, err := openCache(ctx, env.Target)
	if err != nil {
		return nil, err
	}
	rate, dur := st.Rate, time.Duration(p.Duration)
	if rate <= 0 {
		rate = p.Rate
	}
	if st.Duration > 0 {
		dur = st.Duration
	}
	if p.Rounds > 0 {
		dur = p.streamTime(rate)
	}
	goroutines := st.Concurrency
	if goroutines < 1 {
		goroutines = 1
	}
	r := &run{p: p, step: st, env: env, cache: c, cfg: p.genConfig(st.Seed, rate), dur: dur, goroutines: goroutines}
	return r.execute(ctx)
}
