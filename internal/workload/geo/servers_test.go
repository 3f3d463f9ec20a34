package geo_test

import (
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/cassandra" // registers the servers the test starts without env vars
	_ "storebench/internal/server/postgres"
	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	"storebench/internal/workload/geo"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
)

// The whole workload on the server targets with a geo layout of their
// own: PostgreSQL (B-tree), PostGIS (GiST), Redis (sorted sets) and
// Cassandra (partitions by zone and block, timeline by user, TTL), on
// the servers of STOREBENCH_TEST_*_URI (make test starts them) or on one
// started for the test.
func TestWorkloadOnServers(t *testing.T) {
	for _, name := range []string{"postgres", "postgis", "redis", "cassandra"} {
		t.Run(name, func(t *testing.T) {
			study := geo.SmallStudy(5)
			ttl := "21600"
			if name == "cassandra" {
				// About 2,000 points/s on 2 quiet cores, half that under
				// a loaded make test: 12,000 points whatever the time
				// they take, and a retention of 2 simulated hours (4,800
				// points of the 40 users, a point a minute each) so the
				// GC deletes during the ingest (6 hours needed 14,400; a
				// loaded run of 10 s made 11,500).
				study = strings.Replace(study, "duration: 3s", "duration: 60s, points: 12000", 1)
				study = strings.Replace(study, "retention: 6h", "retention: 2h", 1)
				ttl = "7200"
			}
			steps := worktest.Plan(t, geo.Workload{}, study)
			info, err := target.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			// On PostgreSQL (both targets) a database of the test's own,
			// which another package's fresh step, emptying the workload
			// tables of the database it runs in, cannot reach; the
			// PostGIS target creates its extension there itself.
			var uri string
			if info.Server == "postgres" {
				uri = captest.URI(t, name, "geo_test")
			} else {
				uri = servertest.URI(t, info.Server)
			}
			h := captest.Open(t, name, target.Options{URI: uri, Durability: kv.Async})
			defer h.Close()
			res := geo.Execute(t, h, steps)
			geo.CheckRun(t, res)
			if !strings.Contains(res[0].Facts["layout"], map[string]string{"postgres": "B-tree", "postgis": "GiST", "redis": "sorted sets", "cassandra": "default_time_to_live " + ttl}[name]) {
				t.Errorf("layout %q", res[0].Facts["layout"])
			}
			// A second run on the same server starts from an empty layout.
			res = geo.Execute(t, h, steps[:1])
			if res[0].Verify.Checked != int64(res[0].Metrics["points_held"]) {
				t.Errorf("second run: %v", res[0].Metrics)
			}
		})
	}
}
