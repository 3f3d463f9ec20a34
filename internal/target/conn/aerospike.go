package conn

import (
	"slices"
	"sync"

	as "github.com/aerospike/aerospike-client-go/v8"
)

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

var (
	aerospikeSetsMu sync.Mutex
	aerospikeSets   []string
)

// AddAerospikeSets declares sets a workload writes in an Aerospike
// target's namespace (at init), which the target's Reset truncates.
func AddAerospikeSets(sets ...string) {
	aerospikeSetsMu.Lock()
	defer aerospikeSetsMu.Unlock()
	for _, s := range sets {
		if !slices.Contains(aerospikeSets, s) {
			aerospikeSets = append(aerospikeSets, s)
		}
	}
}

// AerospikeSets are the sets the workloads declared, in order.
func AerospikeSets() []string {
	aerospikeSetsMu.Lock()
	defer aerospikeSetsMu.Unlock()
	return slices.Clone(aerospikeSets)
}
