package conn

import (
	"fmt"

	as "github.com/aerospike/aerospike-client-go/v8"
	"github.com/aerospike/aerospike-client-go/v8/types"
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
	Write      *as.WritePolicy
	Batch      *as.BatchPolicy
	BatchWrite *as.BatchWritePolicy
}

// AerospikeBytes decodes the blob bin name of a record's bins: an absent
// (or nil) bin is an error unless optional (then nil: an empty blob may
// come back absent), a bin of another type an error.
func AerospikeBytes(bins as.BinMap, name string, optional bool) ([]byte, error) {
	v, ok := bins[name]
	if !ok || v == nil {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("bin %s missing", name)
	}
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("bin %s is a %T, want bytes", name, v)
	}
	return b, nil
}

// AerospikeInt decodes the integer bin name of a record's bins (the
// client returns int, or int64).
func AerospikeInt(bins as.BinMap, name string) (int64, error) {
	switch v := bins[name].(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case nil:
		return 0, fmt.Errorf("bin %s missing", name)
	default:
		return 0, fmt.Errorf("bin %s is a %T, want an integer", name, v)
	}
}

// AerospikeErr turns the client's Error interface into a plain error
// without wrapping a typed nil.
func AerospikeErr(err as.Error) error {
	if err == nil {
		return nil
	}
	return err
}

// AerospikeNotFound reports whether err says the record does not exist.
func AerospikeNotFound(err as.Error) bool {
	return err != nil && err.Matches(types.KEY_NOT_FOUND_ERROR)
}

// AerospikeReadBack turns the bins a write sends into the map a read of
// them gives back, as the client decodes it: blobs as fresh []byte,
// integers as int (its 64-bit decoding), and an empty blob absent when
// dropEmpty (a server may drop it). For the tests of a layout's bins,
// which run without a server.
func AerospikeReadBack(bins []*as.Bin, dropEmpty bool) as.BinMap {
	m := as.BinMap{}
	for _, b := range bins {
		switch v := b.Value.GetObject().(type) {
		case []byte:
			if len(v) == 0 && dropEmpty {
				continue
			}
			m[b.Name] = append([]byte{}, v...)
		case int:
			m[b.Name] = v
		case int64:
			m[b.Name] = int(v)
		default:
			m[b.Name] = v
		}
	}
	return m
}
