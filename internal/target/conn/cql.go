package conn

import gocql "github.com/apache/cassandra-gocql-driver/v2"

// CQL is a target that speaks CQL (Cassandra).
type CQL interface {
	// CQLSession is the target's gocql session (with the study's
	// consistency), safe for concurrent use.
	CQLSession() *gocql.Session
	// CQLKeyspace is the keyspace the target's URI names (a plain CQL
	// identifier), which the target has created.
	CQLKeyspace() string
}
