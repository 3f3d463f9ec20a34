package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"storebench/internal/server/servertest"
)

// ownRedisDB is database db (2, 10..15) of the shared Redis test server,
// emptied first: a run on a server named by URI is refused when its
// database holds anything (other packages' tests write database 0 and
// 9), so each test that runs storebench on Redis by URI has one of its
// own.
func ownRedisDB(t *testing.T, db int) string {
	t.Helper()
	uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/" + strconv.Itoa(db)
	opt, err := redis.ParseURL(uri)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return uri
}

// A Redis database named by URI that holds someone else's keys (issue
// 33, item 1: the run ended with only usertable:* in it, FLUSHDB): the
// run is refused, exit 2, naming --allow-nonempty; with it the run goes
// ahead beside them and leaves exactly their keys behind.
func TestRunBesideForeignKeysOnRedis(t *testing.T) {
	uri := ownRedisDB(t, 2)
	opt, err := redis.ParseURL(uri)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	for _, k := range []string{"customer:1", "orders:9"} {
		if err := c.Set(ctx, k, "theirs", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "ycsb-small.yaml")
	os.WriteFile(p, []byte(ycsbSmall), 0o644)
	_, stderr, code := runCLI(t, "run", p, "--out", t.TempDir(), "--quiet", "--targets", uri)
	if code != 2 || !strings.Contains(stderr, "holds 2 keys that storebench did not write") || !strings.Contains(stderr, "--allow-nonempty redis") {
		t.Fatalf("exit %d, want 2 and the refusal naming --allow-nonempty\n%s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, "run", p, "--out", t.TempDir(), "--quiet", "--targets", uri, "--allow-nonempty", "redis")
	if code != 0 {
		t.Fatalf("--allow-nonempty redis: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"customer:1", "orders:9"}) {
		t.Errorf("after the run the database holds %d keys (%.5q), want exactly the 2 foreign ones", len(keys), keys)
	}
}
