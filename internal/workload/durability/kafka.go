package durability

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"storebench/internal/kv"
)

// A Kafka log (conn.Kafka): each record is produced to one topic, key =
// the record's key, value = its value, acks=all, and acknowledged once
// the broker's produce response says so. The topic is made before the
// first write of the trial's server (its server is the trial's own: one
// fixed name). After the restart the topic is read once from its start
// to its high watermark, and a record is looked up in what was read (the
// last value of a key wins). No atomic batch: single records.

const (
	kafkaTopic      = "storebench-durability"
	kafkaPartitions = 2
	// kafkaProduceTimeout bounds one produce (the client retries
	// retriable errors until then); a crash cuts it at once.
	kafkaProduceTimeout = 10 * time.Second
	// kafkaSetupTimeout bounds making the topic and waiting for its
	// leaders; kafkaReadTimeout reading it back.
	kafkaSetupTimeout = 60 * time.Second
	kafkaReadTimeout  = 120 * time.Second
)

// kafkaWriter produces records on one client shared by the writers (safe
// for concurrent use).
type kafkaWriter struct {
	cl *kgo.Client
	// ctx is cancelled by the crash: produces in flight, which the
	// client would otherwise retry against the dead broker, end.
	ctx    context.Context
	cancel context.CancelFunc
}

func newKafkaWriter(brokers []string) (*kafkaWriter, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(kafkaTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		// Not idempotent: an idempotent producer cannot fail a record
		// whose produce request went out without an answer (the
		// sequence numbers would go wrong) and retries it until the
		// broker is back, whatever the record's context says; the
		// writers must end while the broker is down. A retried record
		// may then be appended twice: the read-back keeps the last
		// value of a key, the same value.
		kgo.DisableIdempotentWrite(),
		kgo.RecordDeliveryTimeout(kafkaProduceTimeout), kgo.DialTimeout(3*time.Second),
		// A produce that needs fresh metadata (a partition's leader
		// not known yet to this client, just after the topic was
		// made) waits for it no longer than this, not the client's
		// default 5 s: that wait showed as a 5 s span of a trial's
		// 150 writes.
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &kafkaWriter{cl: cl, ctx: ctx, cancel: cancel}, nil
}

func (k *kafkaWriter) write(kvs [][]byte) error {
	if len(kvs) != 2 {
		return errors.New("no atomic batch of records on a Kafka log")
	}
	ctx, cancel := context.WithTimeout(k.ctx, kafkaProduceTimeout)
	defer cancel()
	return k.cl.ProduceSync(ctx, &kgo.Record{Topic: kafkaTopic, Key: kvs[0], Value: kvs[1]}).FirstErr()
}

func (k *kafkaWriter) close() {
	k.cancel()
	k.cl.Close()
}

// makeKafkaTopic creates the topic (replication 1) and waits until its
// partitions have a leader.
func makeKafkaTopic(ctx context.Context, brokers []string) error {
	ctx, cancel := context.WithTimeout(ctx, kafkaSetupTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DialTimeout(3*time.Second))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	var last error
	for {
		req := kmsg.NewPtrCreateTopicsRequest()
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = kafkaTopic, kafkaPartitions, 1
		req.Topics = append(req.Topics, t)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			if errors.Is(err, kerr.TopicAlreadyExists) {
				err = nil
			}
		}
		if err == nil {
			break
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka: creating topic %s: %v", kafkaTopic, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		name := kafkaTopic
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			ready := 0
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if t.Topic != nil && *t.Topic == kafkaTopic && p.ErrorCode == 0 && p.Leader >= 0 {
						ready++
					}
				}
			}
			if ready == kafkaPartitions {
				return nil
			}
			err = fmt.Errorf("%d of %d partitions have a leader", ready, kafkaPartitions)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka: waiting for the leaders of %s: %v", kafkaTopic, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kafkaReader reads the topic back once, at the first get.
type kafkaReader struct {
	brokers []string
	mu      sync.Mutex
	records map[string][]byte
}

func (r *kafkaReader) get(ctx context.Context, key []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		m, err := readKafkaTopic(ctx, r.brokers)
		if err != nil {
			return nil, err
		}
		r.records = m
	}
	v, ok := r.records[string(key)]
	if !ok {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// readKafkaTopic consumes every partition of the topic from its start to
// the high watermark it has when the read begins.
func readKafkaTopic(ctx context.Context, brokers []string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaReadTimeout)
	defer cancel()
	offsets := map[int32]kgo.Offset{}
	for p := range int32(kafkaPartitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DialTimeout(3*time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{kafkaTopic: offsets}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	defer cl.Close()
	ends, err := kafkaEnds(ctx, cl)
	if err != nil {
		return nil, err
	}
	records := map[string][]byte{}
	next := map[int32]int64{} // the next offset to read, per partition
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka: reading %s back (at %v of %v): %w", kafkaTopic, next, ends, err)
		}
		for _, fe := range fs.Errors() {
			// Retriable errors are the client's to retry; others end
			// the read.
			if !kerr.IsRetriable(fe.Err) {
				return nil, fmt.Errorf("kafka: reading %s partition %d back: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < ends[rec.Partition] {
				records[string(rec.Key)] = rec.Value
			}
			next[rec.Partition] = max(next[rec.Partition], rec.Offset+1)
		})
	}
	return records, nil
}

// kafkaEnds are the partitions' high watermarks (ListOffsets, latest),
// asked until every partition has a leader that answers.
func kafkaEnds(ctx context.Context, cl *kgo.Client) (map[int32]int64, error) {
	var last error
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = kafkaTopic
		for p := range int32(kafkaPartitions) {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1 // latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		shards := cl.RequestSharded(ctx, req)
		ends := map[int32]int64{}
		last = nil
		for _, sh := range shards {
			if sh.Err != nil {
				last = sh.Err
				continue
			}
			for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						last = fmt.Errorf("partition %d: %w", p.Partition, err)
						continue
					}
					ends[p.Partition] = p.Offset
				}
			}
		}
		if last == nil && len(ends) == kafkaPartitions {
			return ends, nil
		}
		if last == nil {
			last = fmt.Errorf("offsets of %d of %d partitions", len(ends), kafkaPartitions)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kafka: the high watermarks of %s: %v", kafkaTopic, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
