package conn

import as "github.com/aerospike/aerospike-client-go/v8"

// Aerospike is a target that speaks Aerospike's protocol.
type Aerospike interface {
	// AerospikeClient is the target's client, safe for concurrent use.
	AerospikeClient() *as.Client
	// AerospikeNamespace is the namespace the target's URI names.
	AerospikeNamespace() string
	// AerospikePolicies are the target's policies (its timeouts).
	AerospikePolicies() AerospikePolicies
}

// AerospikePolicies are the policies of an Aerospike target's operations.
type AerospikePolicies struct {
	Read       *as.BasePolicy
	Batch      *as.BatchPolicy
	BatchWrite *as.BatchWritePolicy
}
