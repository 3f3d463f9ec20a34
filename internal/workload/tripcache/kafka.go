package tripcache

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"storebench/internal/kv"
	"storebench/internal/measure/procstat"
	"storebench/internal/server"
	kafkaserver "storebench/internal/server/kafka"
	"storebench/internal/server/proc"
	"storebench/internal/workload"
	"storebench/internal/workload/tripcache/tripgen"
)

func init() { tripgen.KafkaSinkFactory = newKafkaSink }

// The Kafka transport: the generator produces each tick as one record,
// keyed and partitioned by trip (partition = trip mod partitions), so a
// trip's ticks stay in order; the consumer reads every partition from
// the start of a topic made for the step and dropped after it.

// kafkaAcks maps the study's acks onto the producer's; acks other than
// all cannot be idempotent.
func kafkaAcks(acks string) []kgo.Opt {
	switch acks {
	case "all":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	case "none":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}
	}
	return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
}

// kafkaSink produces ticks; the client batches them itself (linger 1 ms)
// and blocks Produce when its buffer is full, which is the generator's
// backpressure.
type kafkaSink struct {
	cl         *kgo.Client
	partitions int32
	mu         sync.Mutex
	err        error
	ctx        context.Context
}

// producerOpts are the generator's producer settings, chosen for
// latency: linger 1 ms (a batch per generator wake-up, not the client's
// default 10 ms), partitions set by the generator (trip mod partitions),
// acks as the study says.
func producerOpts(brokers, topic, acks string) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(20000)}, kafkaAcks(acks)...)
}

func newKafkaSink(ctx context.Context, brokers, topic string, partitions int, acks string) (tripgen.Sink, error) {
	cl, err := kgo.NewClient(producerOpts(brokers, topic, acks)...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	// The stream's start time is set when this returns: everything the
	// first ticks would otherwise wait for happens before it.
	if err := warmProducer(ctx, cl, topic, partitions); err != nil {
		cl.Close()
		return nil, err
	}
	return &kafkaSink{cl: cl, partitions: int32(partitions), ctx: ctx}, nil
}

// warmupKey marks the records the producers send to warm up before a
// stream starts (an empty value under this key; a tick's key is its
// 8-byte trip id): the consumer reads past them and counts no tick.
const warmupKey = "storebench-warmup"

func isWarmup(r *kgo.Record) bool { return len(r.Value) == 0 && string(r.Key) == warmupKey }

// warmProducer makes a producer ready to send at once: it waits for the
// partitions' leaders, then produces one warm-up record to every
// partition and waits for the broker's acknowledgements. A request of
// our own for metadata (waitLeaders) does not fill the producer's own
// metadata, so without this the first ticks paid for the producer's
// metadata load, its produce connection and the broker's first append
// to each partition: 0.3-0.4 s on this machine, in the first second of
// every trial.
func warmProducer(ctx context.Context, cl *kgo.Client, topic string, partitions int) error {
	if err := waitLeaders(ctx, cl, topic, partitions); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, partitions)
	for p := range rs {
		rs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(warmupKey)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: warming up the producer on %s: %w", topic, err)
	}
	return nil
}

// Hello goes to stdout: Kafka has no one ordered channel to carry it
// ahead of every partition's ticks.
func (s *kafkaSink) Hello(startNs int64) error {
	_, err := fmt.Fprintf(os.Stdout, "start %d\n", startNs)
	return err
}

func (s *kafkaSink) Send(t *tripgen.Tick, enc []byte) error {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	r := &kgo.Record{Partition: int32(t.Trip % uint64(s.partitions)), Value: append([]byte(nil), enc...)}
	r.Key = binary.BigEndian.AppendUint64(nil, t.Trip)
	s.cl.Produce(s.ctx, r, func(_ *kgo.Record, err error) {
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
		}
	})
	return nil
}

// Flush is a no-op while sending: the client lingers and batches; a
// flush per wake-up (every millisecond) would defeat its batching.
func (s *kafkaSink) Flush() error { return nil }

func (s *kafkaSink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.cl.Flush(ctx)
	s.cl.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return err
}

// kafkaSource consumes the step's topic.
type kafkaSource struct {
	cl      *kgo.Client
	admin   *kgo.Client
	topic   string
	p       Params
	total   uint64
	gen     *generator
	ctx     context.Context
	cancel  context.CancelFunc
	read    uint64
	buf     []*kgo.Record
	cur     []byte
	brokers string
	managed string
	// brokerPID is the managed broker's process (0: external), whose CPU
	// over the step is the transport's.
	brokerPID              int
	brokerCPU0, brokerCPU1 time.Duration
	// stopped is set by stop: next returns no more ticks, not even those
	// of a fetch already buffered (a cut trial ends at its deadline, not
	// when the consumer has worked through the last fetch).
	stopped atomic.Bool
}

func startKafka(ctx context.Context, p Params, st workload.Step, cfg tripgen.Config, total uint64) (source, int64, error) {
	brokers, managed, pid, err := kafkaBrokers(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	// The admin client also produces the consumer's warm-up records.
	admin, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, 0, fmt.Errorf("tripcache: kafka client: %w", err)
	}
	topic := fmt.Sprintf("storebench-tripcache-%d-%d", os.Getpid(), time.Now().UnixNano())
	if err := createTopic(ctx, admin, topic, p.KafkaPartitions); err != nil {
		admin.Close()
		return nil, 0, err
	}
	if err := waitLeaders(ctx, admin, topic, p.KafkaPartitions); err != nil {
		deleteTopic(admin, topic)
		admin.Close()
		return nil, 0, err
	}
	cctx, cancel := context.WithCancel(ctx)
	cl, err := kgo.NewClient(consumerOpts(brokers, topic, p.KafkaPartitions)...)
	if err != nil {
		cancel()
		deleteTopic(admin, topic)
		admin.Close()
		return nil, 0, fmt.Errorf("tripcache: kafka consumer: %w", err)
	}
	s := &kafkaSource{cl: cl, admin: admin, topic: topic, p: p, total: total, ctx: cctx, cancel: cancel,
		brokers: brokers, managed: managed, brokerPID: pid}
	if pid > 0 {
		s.brokerCPU0, _ = procCPU(pid)
	}
	fail := func(err error) (source, int64, error) {
		if s.gen != nil {
			s.gen.finish(true)
		}
		cancel()
		cl.Close()
		deleteTopic(admin, topic)
		admin.Close()
		return nil, 0, err
	}
	// The consumer is ready before the generator starts: the stream's
	// start instant must not fall before the first fetch.
	if err := warmConsumer(ctx, admin, cl, topic, p.KafkaPartitions); err != nil {
		return fail(err)
	}
	g, stdout, err := startGeneratorPiped(cfg, total, "-kafka", brokers, "-topic", topic,
		"-partitions", strconv.Itoa(p.KafkaPartitions), "-acks", p.KafkaAcks)
	if err != nil {
		return fail(err)
	}
	s.gen = g
	startNs, err := awaitStartLine(ctx, g, stdout)
	if err != nil {
		return fail(err)
	}
	return s, startNs, nil
}

// awaitStartLine waits for the generator's start line on its stdout
// ("start <Unix ns>", the stream's start instant) and returns the
// instant; the rest of its stdout is discarded.
func awaitStartLine(ctx context.Context, g *generator, stdout io.Reader) (int64, error) {
	type hello struct {
		ns  int64
		err error
	}
	ch := make(chan hello, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			ch <- hello{err: err}
			return
		}
		ns, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "start "), 10, 64)
		ch <- hello{ns, err}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case h := <-ch:
		if h.err != nil {
			return 0, fmt.Errorf("tripcache: the generator's start line: %v: %s", h.err, g.stderr.String())
		}
		return h.ns, nil
	case <-g.exited:
		return 0, fmt.Errorf("tripcache: the generator exited before starting: %v: %s", g.err, g.stderr.String())
	case <-time.After(60 * time.Second):
		return 0, errors.New("tripcache: the generator did not start producing within 60s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// consumerOpts are the consumer's settings, chosen for latency: every
// partition assigned directly from offset 0 (no consumer group, so no
// join or rebalance; no offset lookup), a fetch answered as soon as one
// byte is there (FetchMinBytes 1) and held by the broker at most 100 ms
// when there is none (franz-go's default is 5 s: a fetch the broker
// parks is answered when a record arrives, so this only bounds how long
// an idle fetch stays open).
func consumerOpts(brokers, topic string, partitions int) []kgo.Opt {
	offsets := make(map[int32]kgo.Offset, partitions)
	for p := 0; p < partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().At(0)
	}
	return []kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMinBytes(1), kgo.FetchMaxWait(100 * time.Millisecond)}
}

// warmConsumer produces a warm-up record to every partition (with
// producer, whose partitioner must be manual) and polls the
// consumer until it has read each: its metadata is loaded, its
// partitions are assigned, its fetch connection is open and its next
// fetch is parked at the broker when it returns. Without this the first
// fetch came after the stream's start and the first ticks waited ~1 s.
func warmConsumer(ctx context.Context, producer, cl *kgo.Client, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, partitions)
	for p := range rs {
		rs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(warmupKey)}
	}
	if err := producer.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("tripcache: warming up the kafka consumer on %s: %w", topic, err)
	}
	seen := map[int32]bool{}
	for len(seen) < partitions {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("tripcache: warming up the kafka consumer on %s: read the warm-up record of %d of %d partitions: %w", topic, len(seen), partitions, ctx.Err())
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("tripcache: warming up the kafka consumer: fetching %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var other error
		fs.EachRecord(func(r *kgo.Record) {
			if !isWarmup(r) {
				other = fmt.Errorf("tripcache: kafka topic %s: a record at %d/%d before the stream started", topic, r.Partition, r.Offset)
			}
			seen[r.Partition] = true
		})
		if other != nil {
			return other
		}
	}
	return nil
}

// waitLeaders waits until every partition of a new topic has a leader
// (the controller assigns them shortly after the topic is created).
func waitLeaders(ctx context.Context, cl *kgo.Client, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		name := topic
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			last = fmt.Errorf("topic %s not in the metadata yet", topic)
			for _, t := range resp.Topics {
				if t.Topic == nil || *t.Topic != topic {
					continue
				}
				ready := 0
				for _, p := range t.Partitions {
					if p.ErrorCode == 0 && p.Leader >= 0 {
						ready++
					}
				}
				if ready == partitions {
					return nil
				}
				last = fmt.Errorf("%d of %d partitions of %s have a leader", ready, partitions, topic)
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka: waiting for the leaders of %s: %v", topic, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, int32(partitions), 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30000
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return fmt.Errorf("tripcache: creating kafka topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return fmt.Errorf("tripcache: creating kafka topic %s: %w", topic, err)
		}
	}
	return nil
}

// deleteTopic drops the step's topic so its segments do not pile up on
// disk across trials.
func deleteTopic(cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	name := topic
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = &name
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

func (s *kafkaSource) next() ([]byte, error) {
	for {
		r, err := s.record()
		if err != nil || !isWarmup(r) {
			return s.tick(r, err)
		}
		// The generator's producer warmed up on the topic before the
		// stream's start.
	}
}

// record is the next record of the topic, fetched if need be.
func (s *kafkaSource) record() (*kgo.Record, error) {
	if s.stopped.Load() {
		return nil, context.Canceled
	}
	for len(s.buf) == 0 {
		if s.read >= s.total {
			return nil, io.EOF
		}
		fs := s.cl.PollFetches(s.ctx)
		if s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetching %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) { s.buf = append(s.buf, r) })
	}
	r := s.buf[0]
	s.buf = s.buf[1:]
	return r, nil
}

// tick checks a record that carries a tick.
func (s *kafkaSource) tick(r *kgo.Record, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if len(r.Value) != tripgen.WireSize {
		return nil, fmt.Errorf("record of %d bytes at %s/%d offset %d", len(r.Value), r.Topic, r.Partition, r.Offset)
	}
	// Kafka keeps order per partition only, and the partition is the
	// trip's lane (trip mod partitions): the consumer checks that tick
	// indices increase within a lane and verifies a cut trial by how far
	// each lane was read, both of which hold only if every tick is in
	// its trip's partition.
	idx, trip := binary.LittleEndian.Uint64(r.Value), binary.LittleEndian.Uint64(r.Value[8:])
	if want := int32(trip % uint64(s.p.KafkaPartitions)); r.Partition != want {
		return nil, &workload.VerifyError{Phase: tripgen.TransportKafka, Key: tripKey(nil, trip),
			What: fmt.Sprintf("tick %d of trip %d in partition %d, not %d (trip mod %d partitions): its trip's ticks are not kept in order", idx, trip, r.Partition, want, s.p.KafkaPartitions)}
	}
	s.read++
	s.cur = r.Value
	return s.cur, nil
}

func (s *kafkaSource) ordered() bool { return false }
func (s *kafkaSource) lanes() int    { return s.p.KafkaPartitions }
func (s *kafkaSource) stop()         { s.stopped.Store(true); s.cancel() }

func (s *kafkaSource) finish(cut bool) (time.Duration, error) {
	if s.brokerPID > 0 {
		s.brokerCPU1, _ = procCPU(s.brokerPID)
	}
	s.cancel()
	cpu, err := s.gen.finish(cut)
	s.cl.Close()
	if derr := deleteTopic(s.admin, s.topic); derr != nil {
		fmt.Fprintf(os.Stderr, "tripcache: deleting kafka topic %s: %v\n", s.topic, derr)
	}
	s.admin.Close()
	if err == nil && !cut && s.read != s.total {
		err = fmt.Errorf("read %d of %d ticks: ticks lost in transport", s.read, s.total)
	}
	return cpu, err
}

func (s *kafkaSource) transportCPU() time.Duration {
	if s.brokerPID == 0 || s.brokerCPU1 < s.brokerCPU0 {
		return 0
	}
	return s.brokerCPU1 - s.brokerCPU0
}

func (s *kafkaSource) facts() map[string]string {
	where := "external Kafka at " + s.brokers
	if s.managed != "" {
		where = s.managed
	}
	return map[string]string{
		"transport":        fmt.Sprintf("Kafka topic (%s), %d partitions (partition = trip id mod %d, so a trip's ticks stay in order), replication 1, producer acks=%s, linger 1 ms; consumer assigned every partition directly (no group), fetch min 1 byte, max wait 100 ms; both warmed up (one record per partition produced and read) before the stream starts; franz-go %s; one record per tick", where, s.p.KafkaPartitions, s.p.KafkaPartitions, s.p.KafkaAcks, franzVersion),
		"kafka_partitions": strconv.Itoa(s.p.KafkaPartitions),
		"kafka_broker_pid": strconv.Itoa(s.brokerPID),
		"kafka_acks":       s.p.KafkaAcks,
	}
}

const franzVersion = "v1.22.2"

// The managed Kafka of this worker process: started at the first Kafka
// step (~5 s or more: a JVM), kept for the target's later steps and
// trials, and gone with the worker (a tied child process).
var managedKafka struct {
	sync.Mutex
	uri, desc string
	pid       int
}

// kafkaBrokers is the study's Kafka, else $STOREBENCH_KAFKA_URI, else
// the managed one (started now if need be).
func kafkaBrokers(ctx context.Context, p Params) (brokers, managed string, pid int, err error) {
	uri := p.KafkaURI
	if uri == "" {
		uri = os.Getenv("STOREBENCH_KAFKA_URI")
	}
	if uri != "" {
		return strings.TrimPrefix(uri, "kafka://"), "", 0, nil
	}
	managedKafka.Lock()
	defer managedKafka.Unlock()
	if managedKafka.uri == "" {
		uri, desc, pid, err := startManagedKafka(ctx)
		if err != nil {
			return "", "", 0, err
		}
		managedKafka.uri, managedKafka.desc, managedKafka.pid = uri, desc, pid
	}
	return strings.TrimPrefix(managedKafka.uri, "kafka://"), managedKafka.desc, managedKafka.pid, nil
}

// startManagedKafka starts the managed Kafka for this worker in a
// directory named after the worker's PID under the temporary directory;
// directories of workers that are gone are removed first (a worker's
// Kafka dies with it, by the parent-death signal, and cannot clean up).
func startManagedKafka(ctx context.Context) (uri, desc string, pid int, err error) {
	stale, _ := filepath.Glob(filepath.Join(os.TempDir(), "storebench-tripcache-kafka-*"))
	for _, d := range stale {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "storebench-tripcache-kafka-%d-", &pid); err == nil && pid > 0 && !proc.Alive(pid) {
			os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("storebench-tripcache-kafka-%d-", os.Getpid()))
	if err != nil {
		return "", "", 0, fmt.Errorf("tripcache: %w", err)
	}
	// The coordinator installs Kafka before the run (Servers); a worker
	// reached another way (a remote one, a test) installs it here, its
	// progress in the worker's log.
	if err := (kafkaserver.Server{}).Check(); err != nil {
		fmt.Fprintf(os.Stderr, "tripcache: %v; installing\n", err)
		if err := kafkaserver.Install(ctx, os.Stderr); err != nil {
			os.RemoveAll(dir)
			return "", "", 0, fmt.Errorf("tripcache: installing the managed Kafka: %w", err)
		}
	}
	inst, err := kafkaserver.Server{}.Start(ctx, server.Config{Dir: dir, Durability: kv.Async, Log: os.Stderr})
	if err != nil {
		os.RemoveAll(dir)
		return "", "", 0, fmt.Errorf("tripcache: starting the managed Kafka: %w", err)
	}
	return inst.URI, fmt.Sprintf("managed Kafka %s, KRaft, one node on loopback, %s", kafkaserver.Version, inst.Settings["durability_mapping"]), inst.PID, nil
}

// procCPU is a process's user and system CPU time so far, from
// /proc/PID/stat (clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, error) {
	st, err := procstat.StatOf(pid)
	return st.CPU(), err
}
