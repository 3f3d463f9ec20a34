package tripcache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"storebench/internal/kv"
	"storebench/internal/results"
	_ "storebench/internal/server/kafka"
	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/aerospike"
	_ "storebench/internal/target/pebble"
	_ "storebench/internal/target/redis"
	"storebench/internal/target/targettest"
	"storebench/internal/workload"
	"storebench/internal/workload/tripcache/tripgen"
	"storebench/internal/workload/worktest"
)

// TestMain lets the test binary stand in for storebench: the workload
// starts the generator as `<executable> server-main tripgen ...`, which
// in a test is this binary.
func TestMain(m *testing.M) { servertest.Main(m) }

const smallStudy = `
name: t
ladder: [1]
concurrency: 4
targets: [pebble]
workloads:
  - name: tripcache
    params:
      rate: 3000
      duration: 2s
      sensors: 200
      multiplier: 3
      min_ticks: 3
      max_ticks: 12
`

// A small stream through a real generator process and a real engine:
// every tick is processed, every trip completed in the stream is read
// back and matches the generator's, and the figures are filled.
func TestSocketStreamBuildsVerifiedTrips(t *testing.T) {
	steps := worktest.Plan(t, TripCache{}, smallStudy)
	if len(steps) != 1 || steps[0].Phase != "socket" || !steps[0].OpenLoop || !steps[0].Fresh {
		t.Fatalf("plan: %+v", steps)
	}
	h := targettest.Open(t, "pebble", kv.Async)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: h}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 6000 || res.Metrics["ticks_offered"] != 6000 {
		t.Fatalf("processed %d ticks of %v", res.Ops, res.Metrics["ticks_offered"])
	}
	// 600 sensors' trips of 3..12 ticks over 10 rounds each: hundreds
	// complete.
	if res.Verify.Checked < 300 || res.Verify.Failed != 0 || int64(res.Metrics["trips_verified"]) != res.Verify.Checked {
		t.Fatalf("verified %d trips (failed %d)", res.Verify.Checked, res.Verify.Failed)
	}
	if res.ByOp["get"].Count == 0 || res.ByOp["put"].Count != 6000 || res.ByOp["create"].Count == 0 || res.ByOp["complete"].Count == 0 {
		t.Fatalf("by op: %+v", res.ByOp)
	}
	if res.ByOp["get"].Count+res.ByOp["create"].Count != 6000 {
		t.Fatalf("gets %d + creates %d != 6000 ticks", res.ByOp["get"].Count, res.ByOp["create"].Count)
	}
	if res.Intended == nil || res.Intended.P99 <= 0 || len(res.Series) < 2 || res.Series[0].Counts == nil {
		t.Fatalf("e2e %+v series %+v", res.Intended, res.Series)
	}
	if res.Metrics["generator_cpu_s"] <= 0 {
		t.Fatalf("generator CPU not measured: %v", res.Metrics)
	}
	// item_bytes is a trip as written: the mean key and value of the
	// trips in the engine, one per trip created.
	var trips, bytes int
	if err := h.(kv.Store).Scan([]byte("trip:"), []byte("trip;"), func(k, v []byte) bool {
		trips++
		bytes += len(k) + len(v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if float64(trips) != res.Metrics["trips_created"] {
		t.Fatalf("%d trips in the engine, %v created", trips, res.Metrics["trips_created"])
	}
	t.Logf("%d trips, item_bytes %v", trips, res.Metrics[workload.MetricItemBytes])
	if want, got := float64(bytes)/float64(trips), res.Metrics[workload.MetricItemBytes]; math.Abs(got-want) > 1e-9 {
		t.Fatalf("item_bytes %v, the trips in the engine average %v bytes of key and value", got, want)
	}
}

// lossyCache drops one write: the trip it belongs to then misses a tick,
// which must fail the run as a lost tick, naming it.
type lossyCache struct {
	kv.Store
	n, drop int
}

func (c *lossyCache) Put(k, v []byte) error {
	c.n++
	if c.n == c.drop {
		return nil
	}
	return c.Store.Put(k, v)
}

func TestLostTickFailsTheRun(t *testing.T) {
	steps := worktest.Plan(t, TripCache{}, strings.Replace(smallStudy, "concurrency: 4", "concurrency: 1", 1))
	h := targettest.Open(t, "pebble", kv.Async).(kv.Store)
	_, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: &lossyCache{Store: h, drop: 1500}}, steps[0])
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "was lost") && !strings.Contains(err.Error(), "duplicated") && !strings.Contains(err.Error(), "generator made") {
		t.Fatalf("a dropped write gave %v", err)
	}
}

// A consumer slower than the stream: achieved falls behind the offered
// rate, the backlog shows in the series, and the run still ends near
// its deadline (grace) rather than when the backlog would drain.
type slowCache struct{ kv.Store }

func (c slowCache) Put(k, v []byte) error {
	time.Sleep(2 * time.Millisecond)
	return c.Store.Put(k, v)
}

func TestOverloadShowsAsBacklog(t *testing.T) {
	src := strings.Replace(smallStudy, "concurrency: 4", "concurrency: 1", 1)
	src = strings.Replace(src, "max_ticks: 12", "max_ticks: 12\n      grace: 1s\n      queue: 100", 1)
	steps := worktest.Plan(t, TripCache{}, src)
	h := targettest.Open(t, "pebble", kv.Async).(kv.Store)
	start := time.Now()
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: slowCache{h}}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Fatalf("an overloaded trial took %s", el)
	}
	achieved := float64(res.Ops) / res.Seconds
	if achieved > 0.9*3000 || res.Facts["cut"] == "" {
		t.Fatalf("achieved %.0f/s of 3000 (cut: %q)", achieved, res.Facts["cut"])
	}
	var backlog int64
	for _, tk := range res.Series {
		backlog = max(backlog, tk.Counts["backlog"])
	}
	if backlog < 1000 || res.Metrics["queue_max"] < 50 || res.Metrics["backlog_end"] < 1000 {
		t.Fatalf("backlog %d (at the end %v), queue max %v", backlog, res.Metrics["backlog_end"], res.Metrics["queue_max"])
	}
	// What was read was verified all the same.
	if res.Verify.Checked == 0 {
		t.Fatal("nothing verified")
	}
	_ = tripgen.WireSize
}

// The Kafka transport on a real broker (STOREBENCH_TEST_KAFKA_URI, else
// one started for the test): every tick crosses a topic of 3 partitions
// and every completed trip verifies; the topic is dropped afterwards.
func TestKafkaStreamBuildsVerifiedTrips(t *testing.T) {
	uri := servertest.URI(t, "kafka")
	src := strings.Replace(smallStudy, "rate: 3000", "rate: 3000\n      transport: kafka\n      kafka_partitions: 3\n      kafka_acks: all", 1)
	steps := worktest.Plan(t, TripCache{}, src, "tripcache.kafka_uri="+uri)
	if len(steps) != 1 || steps[0].Phase != "kafka" {
		t.Fatalf("plan: %+v", steps)
	}
	h := targettest.Open(t, "pebble", kv.Async)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: h}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 6000 || res.Verify.Checked < 300 || res.Verify.Failed != 0 {
		t.Fatalf("processed %d ticks, verified %d trips", res.Ops, res.Verify.Checked)
	}
	if res.Facts["kafka_partitions"] != "3" || res.Facts["kafka_acks"] != "all" || !strings.Contains(res.Facts["transport"], "3 partitions") {
		t.Fatalf("facts: %v", res.Facts)
	}
	// The step's topic is gone.
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.TrimPrefix(uri, "kafka://")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		if tp.Topic != nil && strings.HasPrefix(*tp.Topic, fmt.Sprintf("storebench-tripcache-%d-", os.Getpid())) {
			t.Fatalf("topic %s left behind", *tp.Topic)
		}
	}
}

// A server target through its YCSB record layout (Redis): the upsert
// probe finds HSET overwrites, so an update is one write.
func TestRedisCache(t *testing.T) {
	uri := servertest.URI(t, "redis")
	info, err := target.Lookup("redis")
	if err != nil {
		t.Fatal(err)
	}
	h, err := info.Open(target.Options{URI: uri, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := openCache(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if dc, ok := c.(dbCache); !ok || !dc.upsert {
		t.Fatalf("redis cache: %#v", c)
	}
	steps := worktest.Plan(t, TripCache{}, smallStudy)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: h}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 6000 || res.Verify.Checked < 300 {
		t.Fatalf("processed %d ticks, verified %d trips", res.Ops, res.Verify.Checked)
	}
}

// Aerospike through its YCSB record layout: every tick processed, the
// trips read back verified. Only on the server
// STOREBENCH_TEST_AEROSPIKE_URI names: no package ships Aerospike's
// server, so without it the test is skipped, saying so.
func TestAerospikeCache(t *testing.T) {
	uri := servertest.ByURI(t, "aerospike", "aerospike://host:port/namespace")
	info, err := target.Lookup("aerospike")
	if err != nil {
		t.Fatal(err)
	}
	h, err := info.Open(target.Options{URI: uri, Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := openCache(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	steps := worktest.Plan(t, TripCache{}, smallStudy)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: h}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 6000 || res.Verify.Checked < 300 {
		t.Fatalf("processed %d ticks, verified %d trips", res.Ops, res.Verify.Checked)
	}
}

// At a low rate the Kafka transport's end-to-end latency is the
// transport's and the cache's, not a warm-up: the producer's metadata
// and first batch and the consumer's first fetch happen before the
// stream's start, so no tick, the first ones included, waits for them.
// (Before, the first ticks of every trial waited 0.5-1 s and the p99 of
// any trial was above the study's 100 ms SLO whatever the rate.) A bound,
// not a speed goal, and on what a warm-up shows: the first second's
// worst latency at 400 ms or more and over twice any later second's. A
// loaded make test (2 cores shared with other packages' servers) has
// shown a p99 of 162 ms, and once a stall of a second later in the run,
// neither of them a warm-up.
func TestKafkaLowRateLatencyIsNotAWarmUp(t *testing.T) {
	uri := servertest.URI(t, "kafka")
	src := strings.Replace(smallStudy, "rate: 3000", "rate: 500\n      transport: kafka\n      kafka_partitions: 4\n      kafka_acks: leader", 1)
	src = strings.Replace(src, "duration: 2s", "duration: 3s", 1)
	steps := worktest.Plan(t, TripCache{}, src, "tripcache.kafka_uri="+uri)
	h := targettest.Open(t, "pebble", kv.Async)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: h}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 1500 || res.Verify.Failed != 0 {
		t.Fatalf("processed %d of 1500 ticks, verify %+v", res.Ops, res.Verify)
	}
	if len(res.Series) < 2 {
		t.Fatalf("%d ticks in the series of a 3 s run", len(res.Series))
	}
	first := time.Duration(res.Series[0].IntendedMax)
	var later time.Duration
	for _, tk := range res.Series[1:] {
		later = max(later, time.Duration(tk.IntendedMax))
	}
	t.Logf("p50 %v p99 %v max %v; first second's max %v, later seconds' %v", time.Duration(res.Intended.P50), time.Duration(res.Intended.P99), time.Duration(res.Intended.Max), first, later)
	if first >= 400*time.Millisecond && first > 2*later {
		t.Fatalf("the first second's ticks waited up to %v (later seconds' at most %v) at 500 ticks/s: a warm-up", first, later)
	}
}

// kafkaCutStudy is a Kafka trial too fast for its consumer (slowCache,
// one goroutine: 2 ms a tick at most 500 ticks/s of the 3000 offered),
// so it is cut at its deadline with most ticks unread. Kafka keeps
// order per partition only, and the consumer reads a fetch partition
// by partition, so at the cut one partition is read further than
// another: the ticks read are not the stream's first ones.
// The Kafka is named as the command line would (a study file may not).
func kafkaCutStudy() string {
	src := strings.Replace(smallStudy, "concurrency: 4", "concurrency: 1", 1)
	src = strings.Replace(src, "rate: 3000", "rate: 3000\n      transport: kafka\n      kafka_partitions: 3\n      kafka_acks: leader", 1)
	return strings.Replace(src, "max_ticks: 12", "max_ticks: 12\n      grace: 1s\n      queue: 100", 1)
}

// A cut Kafka trial verifies exactly the trips whose every tick was
// consumed, and passes. (It used to read back every trip completed
// within the first n tick indices, n the ticks read, and failed on a
// trip of a partition read less far: "trip {… Ticks:19 …} (completed
// false), the generator made {… Ticks:20 …}".)
func TestKafkaCutTrialVerifiesWhatWasConsumed(t *testing.T) {
	uri := servertest.URI(t, "kafka")
	steps := worktest.Plan(t, TripCache{}, kafkaCutStudy(), "tripcache.kafka_uri="+uri)
	h := targettest.Open(t, "pebble", kv.Async).(kv.Store)
	res, err := TripCache{}.Execute(context.Background(), &workload.Env{Target: slowCache{h}}, steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Facts["cut"] == "" || res.Ops >= 6000 {
		t.Fatalf("the trial was not cut: %d of 6000 ticks processed (cut: %q)", res.Ops, res.Facts["cut"])
	}
	if res.Verify.Checked == 0 || res.Verify.Failed != 0 {
		t.Fatalf("verify %+v", res.Verify)
	}
	t.Logf("cut after %d of 6000 ticks; %d trips verified", res.Ops, res.Verify.Checked)
}

// laneSource is a transport that keeps order per lane only, as Kafka
// does per partition, cut in a test's chosen place: lane l delivers its
// ticks below upTo[l] (all of one lane, then the next, as a consumer
// reads a fetch), all but the tick drop, then nothing until the trial's
// deadline stops it.
type laneSource struct {
	cfg     tripgen.Config
	upTo    []uint64
	drop    uint64 // a tick index lost in transport (past the stream: none)
	ticks   [][]byte
	stopped chan struct{}
	once    sync.Once
}

func (s *laneSource) open(_ context.Context, total uint64) (source, int64, error) {
	start := time.Now().UnixNano()
	st, err := tripgen.New(s.cfg, start)
	if err != nil {
		return nil, 0, err
	}
	for l := range s.upTo {
		for i := uint64(0); i < min(total, s.upTo[l]); i++ {
			if tk := st.Tick(i); tk.Trip%uint64(len(s.upTo)) == uint64(l) && i != s.drop {
				s.ticks = append(s.ticks, tk.Append(nil))
			}
		}
	}
	s.stopped = make(chan struct{})
	return s, start, nil
}

func (s *laneSource) next() ([]byte, error) {
	if len(s.ticks) > 0 {
		p := s.ticks[0]
		s.ticks = s.ticks[1:]
		return p, nil
	}
	<-s.stopped
	return nil, errors.New("stopped")
}
func (s *laneSource) ordered() bool                      { return false }
func (s *laneSource) lanes() int                         { return len(s.upTo) }
func (s *laneSource) stop()                              { s.once.Do(func() { close(s.stopped) }) }
func (s *laneSource) finish(bool) (time.Duration, error) { return 0, nil }
func (s *laneSource) facts() map[string]string           { return map[string]string{} }
func (s *laneSource) transportCPU() time.Duration        { return 0 }

// laneRun runs 3000 ticks (0.5 s at 6000/s) of a small stream through
// src into a Pebble cache, cut at the stream's end.
func laneRun(t *testing.T, src *laneSource) (*results.Step, error) {
	t.Helper()
	p := defaults()
	p.Sensors, p.Multiplier, p.MinTicks, p.MaxTicks, p.Grace = 200, 3, 3, 12, 0
	src.cfg = p.genConfig(1, 6000)
	h := targettest.Open(t, "pebble", kv.Async)
	c, err := openCache(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{p: p, step: workload.Step{Workload: "tripcache", Phase: tripgen.TransportKafka}, env: &workload.Env{Target: h},
		cache: c, cfg: src.cfg, dur: 500 * time.Millisecond, goroutines: 4, open: src.open}
	return r.execute(context.Background())
}

// A cut trial whose lanes were read unevenly (lane 0 to the end, lane 1
// to tick 300, lane 2 to 1500, lane 3 not at all) verifies exactly the
// trips whose every tick was read: those whose end tick was delivered.
// (Verification used to take the ticks read as the stream's first ones
// and failed on the trips of lanes read less far.)
func TestCutTrialVerifiesTripsReadWhole(t *testing.T) {
	src := &laneSource{upTo: []uint64{3000, 300, 1500, 0}, drop: 1 << 62}
	st, err := laneRun(t, src)
	if err != nil {
		t.Fatal(err)
	}
	// The trips to verify, counted from the ticks delivered.
	var ends int64
	s, _ := tripgen.New(src.cfg, 0)
	for l, up := range src.upTo {
		for i := uint64(0); i < up; i++ {
			if tk := s.Tick(i); tk.Trip%4 == uint64(l) && tk.Flags&tripgen.FlagEnd != 0 {
				ends++
			}
		}
	}
	if st.Facts["cut"] == "" || st.Ops != int64(st.Metrics["ticks_read"]) || st.Ops >= 3000 {
		t.Fatalf("processed %d ticks, read %v (cut: %q)", st.Ops, st.Metrics["ticks_read"], st.Facts["cut"])
	}
	if ends < 100 || st.Verify.Checked != ends || st.Verify.Failed != 0 {
		t.Fatalf("verified %d trips (failed %d), %d ended among the ticks read", st.Verify.Checked, st.Verify.Failed, ends)
	}
}

// The same cut trial with one tick lost in transport, the last of a trip
// in lane 0: the trip is incomplete in the cache though its lane was
// read past it, and verification fails naming it.
func TestCutTrialStillFindsALostTick(t *testing.T) {
	p := defaults()
	p.Sensors, p.Multiplier, p.MinTicks, p.MaxTicks = 200, 3, 3, 12
	s, _ := tripgen.New(p.genConfig(1, 6000), 0)
	var lost tripgen.Tick
	for i := uint64(1000); ; i++ {
		if lost = s.Tick(i); lost.Trip%4 == 0 && lost.Flags&tripgen.FlagEnd != 0 && lost.Flags&tripgen.FlagStart == 0 {
			break
		}
	}
	_, err := laneRun(t, &laneSource{upTo: []uint64{3000, 300, 1500, 0}, drop: lost.Index})
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || string(ve.Key) != string(tripKey(nil, lost.Trip)) || !strings.Contains(err.Error(), "completed false") {
		t.Fatalf("tick %d (the end of trip %d) lost: %v", lost.Index, lost.Trip, err)
	}
}

// A Kafka tick outside its trip's partition is refused: a trip's ticks
// would no longer be in order, nor a cut trial's trips read whole.
func TestKafkaTickInAnotherPartitionIsRefused(t *testing.T) {
	s := &kafkaSource{p: Params{KafkaPartitions: 3}}
	tk := tripgen.Tick{Index: 7, Trip: 4}
	if _, err := s.tick(&kgo.Record{Partition: 1, Value: tk.Append(nil)}, nil); err != nil {
		t.Fatalf("trip 4 in partition 1 of 3: %v", err)
	}
	_, err := s.tick(&kgo.Record{Partition: 0, Value: tk.Append(nil)}, nil)
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "partition 0, not 1") {
		t.Fatalf("trip 4 in partition 0 of 3: %v", err)
	}
}

// A stopped Kafka source hands out no more ticks, not even those of a
// fetch it holds: a cut trial ends at its deadline, not after its slow
// consumer has worked through the last fetch (thousands of ticks).
func TestStoppedKafkaSourceHandsOutNoBufferedTick(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tk := tripgen.Tick{Index: 0, Trip: 3}
	s := &kafkaSource{p: Params{KafkaPartitions: 3}, total: 10, ctx: ctx, cancel: cancel,
		buf: []*kgo.Record{{Partition: 0, Value: tk.Append(nil)}, {Partition: 0, Value: tk.Append(nil)}}}
	if _, err := s.next(); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if p, err := s.next(); err == nil {
		t.Fatalf("stopped, next gave a tick of %d bytes", len(p))
	}
}
