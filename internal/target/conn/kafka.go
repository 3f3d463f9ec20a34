package conn

// Kafka is a target that speaks Kafka's protocol to a broker: an
// append-only log of records in topics, read back in order from an
// offset. The workloads make their own clients (franz-go) on its
// brokers, with the producer and consumer settings they need.
type Kafka interface {
	// KafkaBrokers are the seed brokers, host:port each.
	KafkaBrokers() []string
}
