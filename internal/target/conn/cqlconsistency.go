package conn

import gocql "github.com/apache/cassandra-gocql-driver/v2"

// CQLConsistencies is a CQL target's consistency levels: the session's,
// of every write and read, and that of the reads a layout may ask of more
// replicas than its writes (Cassandra's option read_consistency).
type CQLConsistencies interface {
	CQLConsistency() (write, read gocql.Consistency)
}
