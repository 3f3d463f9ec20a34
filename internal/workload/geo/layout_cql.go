package geo

import (
	"context"
	"fmt"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/target/conn"
)

// The geo workload's layout (seed 002's GPS points), one table per query
// as Cassandra data modelling prescribes:
//
//	geo_zone   PRIMARY KEY ((block, zx, zy), ts, user)  lat, lon   who was in a 100 m zone during a 1000 s block
//	geo_user   PRIMARY KEY ((user, day), ts)            lat, lon   a user's timeline, one partition per user and day
//	geo_blocks PRIMARY KEY ((block), kind, a, b)                   the partitions a block wrote (zones, user-days), for the GC
//
// Both point tables expire their rows by TTL (default_time_to_live = the
// retention) under TimeWindowCompactionStrategy: in a deployment, whose
// points carry wall-clock timestamps, a point expires when it is older
// than the retention and TWCS drops whole SSTables of expired windows
// without reading tombstones. In the study the simulated clock runs far
// faster than the wall clock the server's TTL counts (days pass in a
// minute), so the TTL cannot fire at the simulated retention; the GC pass
// does what TTL expiry does to a time block, by partition: a partition
// tombstone per zone of each block before the cutoff, a range tombstone
// (ts < cutoff) per user-day it touched. geo_blocks is written once per
// partition per process (a cache of what was listed), so the listing
// costs a few writes per batch, not one per point.
//
// A batch of points is written as one UNLOGGED batch per partition it
// touches, concurrently (a multi-partition batch would go through one
// coordinator as one large request and trip batch_size_fail_threshold);
// all are idempotent upserts, so a batch that failed half-way is simply
// written again.

const geoDaySeconds = 86400

// geoConcurrency bounds the INSERTs one batch has in flight.
const geoConcurrency = 64

// cqlStore is the geo layout on a CQL target (conn.CQL: Cassandra), the
// session's keyspace, writes at its consistency and reads at its read
// consistency (conn.CQLConsistencies). Its state lives for one step: the
// ingest, which sets the retention and prepares the layout, is the only
// step that writes.
type cqlStore struct {
	s              *gocql.Session
	ks             string
	cons, readCons gocql.Consistency

	mu     sync.Mutex
	listed map[[4]int64]bool // geo_blocks rows this process wrote
	ttl    int               // seconds; 0: no expiry
}

// SetRetention implements Retainer: the tables' TTL.
func (s *cqlStore) SetRetention(d time.Duration) {
	s.mu.Lock()
	s.ttl = int(d / time.Second)
	s.mu.Unlock()
}

func (s *cqlStore) geoLayout() string {
	s.mu.Lock()
	ttl := s.ttl
	s.mu.Unlock()
	return fmt.Sprintf("tables geo_zone ((block, zx, zy), ts, user) and geo_user ((user, day), ts), TWCS with default_time_to_live %d s (the retention); "+
		"the simulated clock outruns the TTL's wall clock, so the GC pass deletes the blocks before its cutoff by partition (listed in geo_blocks); writes at %s, reads at %s", ttl, s.cons, s.readCons)
}

// PrepareGeo implements Store: the tables are dropped and recreated.
func (s *cqlStore) PrepareGeo(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.listed = map[[4]int64]bool{}
	ttl := s.ttl
	s.mu.Unlock()
	// TWCS windows of about a tenth of the retention (at least an hour).
	window := max(ttl/10/3600, 1)
	opts := fmt.Sprintf(" WITH default_time_to_live = %d AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', 'compaction_window_size': %d}", ttl, window)
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + s.ks + ".geo_zone",
		"DROP TABLE IF EXISTS " + s.ks + ".geo_user",
		"DROP TABLE IF EXISTS " + s.ks + ".geo_blocks",
		"CREATE TABLE " + s.ks + ".geo_zone (block bigint, zx int, zy int, ts bigint, user bigint, lat double, lon double, PRIMARY KEY ((block, zx, zy), ts, user))" + opts,
		"CREATE TABLE " + s.ks + ".geo_user (user bigint, day bigint, ts bigint, lat double, lon double, PRIMARY KEY ((user, day), ts))" + opts,
		"CREATE TABLE " + s.ks + ".geo_blocks (block bigint, kind int, a bigint, b bigint, PRIMARY KEY ((block), kind, a, b))",
	} {
		if err := s.s.Query(q).ExecContext(ctx); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
	}
	return s.geoLayout(), nil
}

// AttachGeo implements Attacher: the tables another worker process
// created are kept.
func (s *cqlStore) AttachGeo(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.listed = map[[4]int64]bool{}
	s.mu.Unlock()
	return s.geoLayout(), nil
}

const (
	listZone = 0
	listUser = 1
)

// geoParallel runs f(i) for i in 0..n-1, at most geoConcurrency at once,
// and returns the first error.
func geoParallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, geoConcurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}(i)
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// InsertPoints implements Store.
func (s *cqlStore) InsertPoints(ctx context.Context, pts []Point) error {
	var lists [][4]int64
	s.mu.Lock()
	if s.listed == nil {
		s.listed = map[[4]int64]bool{}
	}
	for _, p := range pts {
		blk := Block(p.TS)
		zx, zy := Zone(p.Lat, p.Lon)
		for _, l := range [][4]int64{{blk, listZone, int64(zx), int64(zy)}, {blk, listUser, p.User, p.TS / geoDaySeconds}} {
			if !s.listed[l] {
				s.listed[l] = true
				lists = append(lists, l)
			}
		}
	}
	s.mu.Unlock()
	// The listing goes first: a block's partitions are listed before any
	// of their rows exist, so a GC pass never misses one.
	err := geoParallel(ctx, len(lists), func(ctx context.Context, i int) error {
		l := lists[i]
		return s.s.Query("INSERT INTO "+s.ks+".geo_blocks (block, kind, a, b) VALUES (?, ?, ?, ?)", l[0], int(l[1]), l[2], l[3]).ExecContext(ctx)
	})
	if err != nil {
		s.unlist(lists)
		return err
	}
	// The rows of one partition go in one UNLOGGED batch: applied
	// atomically by its replicas, no batchlog, and exempt from the batch
	// size thresholds (they apply to multi-partition batches).
	type zoneKey struct {
		block  int64
		zx, zy int32
	}
	type userKey struct{ user, day int64 }
	zones := map[zoneKey][]Point{}
	users := map[userKey][]Point{}
	var zk []zoneKey
	var uk []userKey
	for _, p := range pts {
		zx, zy := Zone(p.Lat, p.Lon)
		z := zoneKey{Block(p.TS), zx, zy}
		if _, ok := zones[z]; !ok {
			zk = append(zk, z)
		}
		zones[z] = append(zones[z], p)
		u := userKey{p.User, p.TS / geoDaySeconds}
		if _, ok := users[u]; !ok {
			uk = append(uk, u)
		}
		users[u] = append(users[u], p)
	}
	insZone := "INSERT INTO " + s.ks + ".geo_zone (block, zx, zy, ts, user, lat, lon) VALUES (?, ?, ?, ?, ?, ?, ?)"
	insUser := "INSERT INTO " + s.ks + ".geo_user (user, day, ts, lat, lon) VALUES (?, ?, ?, ?, ?)"
	return geoParallel(ctx, len(zk)+len(uk), func(ctx context.Context, i int) error {
		b := s.s.Batch(gocql.UnloggedBatch).WithContext(ctx)
		if i < len(zk) {
			z := zk[i]
			for _, p := range zones[z] {
				b.Query(insZone, z.block, int(z.zx), int(z.zy), p.TS, p.User, p.Lat, p.Lon)
			}
		} else {
			u := uk[i-len(zk)]
			for _, p := range users[u] {
				b.Query(insUser, u.user, u.day, p.TS, p.Lat, p.Lon)
			}
		}
		return b.Exec()
	})
}

// unlist forgets listing rows whose write may have failed, so the next
// batch writes them again.
func (s *cqlStore) unlist(lists [][4]int64) {
	s.mu.Lock()
	for _, l := range lists {
		delete(s.listed, l)
	}
	s.mu.Unlock()
}

// Timeline implements Store: one partition slice per day of the window.
func (s *cqlStore) Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	return s.timeline(ctx, user, from, to, s.readCons, fn)
}

// timeline reads user's points in [from, to) at consistency cons.
func (s *cqlStore) timeline(ctx context.Context, user, from, to int64, cons gocql.Consistency, fn func(Point) error) error {
	if to <= from {
		return nil
	}
	for day := from / geoDaySeconds; day <= (to-1)/geoDaySeconds; day++ {
		it := s.s.Query("SELECT ts, lat, lon FROM "+s.ks+".geo_user WHERE user = ? AND day = ? AND ts >= ? AND ts < ?", user, day, from, to).Consistency(cons).WithContext(ctx).Iter()
		var p Point
		p.User = user
		for it.Scan(&p.TS, &p.Lat, &p.Lon) {
			if err := fn(p); err != nil {
				_ = it.Close()
				return err
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Near implements Store: each zone partition of a block the track's
// boxes touch, sliced once over the track's span in the block, the
// slices concurrently.
func (s *cqlStore) Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error {
	cells, want := TrackCells(track, meters)
	found := make([][]Point, len(cells))
	err := geoParallel(ctx, len(cells), func(ctx context.Context, i int) error {
		c := cells[i]
		it := s.s.Query("SELECT ts, user, lat, lon FROM "+s.ks+".geo_zone WHERE block = ? AND zx = ? AND zy = ? AND ts >= ? AND ts <= ?",
			c.Block, int(c.ZX), int(c.ZY), c.From, c.To).Consistency(s.readCons).WithContext(ctx).Iter()
		var p Point
		for it.Scan(&p.TS, &p.User, &p.Lat, &p.Lon) {
			if u, ok := want[p.TS]; ok && u != p.User {
				found[i] = append(found[i], p)
			}
		}
		return it.Close()
	})
	if err != nil {
		return err
	}
	for _, ps := range found {
		for _, p := range ps {
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteBefore implements Store: every listed block before the
// cutoff, by partition. The points are not counted (it would read every
// row the deletes shadow): -1.
func (s *cqlStore) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	cut := Block(before)
	var blocks []int64
	it := s.s.Query("SELECT DISTINCT block FROM " + s.ks + ".geo_blocks").WithContext(ctx).Iter()
	var b int64
	for it.Scan(&b) {
		if b < cut {
			blocks = append(blocks, b)
		}
	}
	if err := it.Close(); err != nil {
		return -1, err
	}
	for _, blk := range blocks {
		var lists [][4]int64
		it := s.s.Query("SELECT kind, a, b FROM "+s.ks+".geo_blocks WHERE block = ?", blk).WithContext(ctx).Iter()
		var kind int
		var a, bb int64
		for it.Scan(&kind, &a, &bb) {
			lists = append(lists, [4]int64{blk, int64(kind), a, bb})
		}
		if err := it.Close(); err != nil {
			return -1, err
		}
		err := geoParallel(ctx, len(lists), func(ctx context.Context, i int) error {
			l := lists[i]
			if l[1] == listZone {
				return s.s.Query("DELETE FROM "+s.ks+".geo_zone WHERE block = ? AND zx = ? AND zy = ?", blk, int(l[2]), int(l[3])).ExecContext(ctx)
			}
			return s.s.Query("DELETE FROM "+s.ks+".geo_user WHERE user = ? AND day = ? AND ts < ?", l[2], l[3], before).ExecContext(ctx)
		})
		if err != nil {
			return -1, err
		}
		// The listing goes last, once its partitions are deleted.
		if err := s.s.Query("DELETE FROM "+s.ks+".geo_blocks WHERE block = ?", blk).ExecContext(ctx); err != nil {
			return -1, err
		}
	}
	return -1, nil
}

// GeoStats implements Store: a scan of the timeline table.
func (s *cqlStore) GeoStats(ctx context.Context) (count, oldest, newest int64, err error) {
	return s.geoStatsAt(ctx, s.readCons)
}

func (s *cqlStore) geoStatsAt(ctx context.Context, cons gocql.Consistency) (count, oldest, newest int64, err error) {
	it := s.s.Query("SELECT ts FROM " + s.ks + ".geo_user").Consistency(cons).WithContext(ctx).Iter()
	var ts int64
	for it.Scan(&ts) {
		if count == 0 || ts < oldest {
			oldest = ts
		}
		newest = max(newest, ts)
		count++
	}
	if err := it.Close(); err != nil {
		return 0, 0, 0, err
	}
	return count, oldest, newest, nil
}

// TimelineDurable implements DurableReader: a timeline read at
// consistency ALL (every replica answers, the newest row wins), which
// must see every acknowledged point whatever consistency wrote it.
func (s *cqlStore) TimelineDurable(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	return s.timeline(ctx, user, from, to, gocql.All, fn)
}

// DurableRead implements DurableReader.
func (s *cqlStore) DurableRead() string {
	return "consistency ALL (every replica answers; the newest value any of them holds is returned)"
}

func init() { conn.AddOwnTables("geo_zone", "geo_user", "geo_blocks") }
