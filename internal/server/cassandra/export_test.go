package cassandra

// SeesRing is seesRing, for the cluster test.
var SeesRing = seesRing
