// Package conn names what a server target offers the workloads as its
// driver's own handle (a RESP client, ...), for the layouts a workload
// keeps on it in its own package (e.g. workload/ledger's layout_resp.go).
// What SQL targets offer is in package target (target.SQLDB, written
// through a dialect); the key-value engines offer kv.Store.
package conn

import (
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// RESP is a target that speaks RESP to one server (Redis, not a cluster).
type RESP interface {
	// RESPClient is the target's go-redis client, safe for concurrent use.
	RESPClient() *redis.Client
}

// Mongo is a target that speaks MongoDB's protocol (MongoDB, FerretDB).
type Mongo interface {
	// MongoDatabase is the database the target's URI names, on its
	// client (with the study's write concern), safe for concurrent use.
	MongoDatabase() *mongo.Database
}

// MongoBinaryIDs is the optional choice of a Mongo target for the _id of
// a document keyed by bytes (option address_id): binary when true, the
// bytes' hex string otherwise (FerretDB finds string _ids through its
// primary key and scans the collection for binary ones).
type MongoBinaryIDs interface {
	MongoBinaryIDs() bool
}
