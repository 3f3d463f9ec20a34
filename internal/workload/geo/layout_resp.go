package geo

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"storebench/internal/target/conn"
)

// The geo workload's layout (seed 002's GPS points), the seed's zones and
// time blocks in sorted sets:
//
//	geo:z:<block>:<zx>:<zy>  sorted set: score = ts, member = user|ts|lat|lon (32 bytes)
//	geo:u:<block>:<user>     sorted set: score = ts, member = ts|lat|lon (24 bytes)
//	geo:b:<block>            set: the keys of the block
//	geo:blocks               sorted set: the blocks (score = block)
//
// A batch is one MULTI/EXEC pipeline (one ZADD per key it touches).
// Timelines read the user's key of each block of the window, and "who was
// near" the zones around the track, in one pipeline each. The GC deletes
// whole blocks (their keys listed in geo:b:<block>): Redis' EXPIRE is
// wall-clock time, and the simulated clock runs far faster, so expiry is
// the GC's explicit DEL of blocks older than the retention.

// respStore is the geo layout on a RESP target (conn.RESP: Redis).
type respStore struct{ c *redis.Client }

const geoLayout = "sorted sets geo:z:<block>:<zx>:<zy> (score ts, member user|ts|lat|lon) and geo:u:<block>:<user> (score ts), blocks of 1000 s and zones of 100 m; GC deletes whole blocks"

func zoneSetKey(block int64, zx, zy int32) string {
	return "geo:z:" + strconv.FormatInt(block, 10) + ":" + strconv.Itoa(int(zx)) + ":" + strconv.Itoa(int(zy))
}

func userSetKey(block, user int64) string {
	return "geo:u:" + strconv.FormatInt(block, 10) + ":" + strconv.FormatInt(user, 10)
}

func blockSetKey(block int64) string { return "geo:b:" + strconv.FormatInt(block, 10) }

const blocksKey = "geo:blocks"

func appendF(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
}
func readF(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) }

// PrepareGeo implements Store: drop every key of an earlier run.
func (s respStore) PrepareGeo(ctx context.Context) (string, error) {
	blocks, err := s.c.ZRange(ctx, blocksKey, 0, -1).Result()
	if err != nil {
		return "", err
	}
	for _, b := range blocks {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			return "", fmt.Errorf("redis: %s holds %q, not a block", blocksKey, b)
		}
		if _, err := s.dropBlock(ctx, n, false); err != nil {
			return "", err
		}
	}
	return geoLayout, s.c.Del(ctx, blocksKey).Err()
}

// InsertPoints implements Store.
func (s respStore) InsertPoints(ctx context.Context, pts []Point) error {
	zones := map[string][]redis.Z{}
	users := map[string][]redis.Z{}
	blockKeys := map[int64][]any{}
	for _, p := range pts {
		blk := Block(p.TS)
		zx, zy := Zone(p.Lat, p.Lon)
		zk, uk := zoneSetKey(blk, zx, zy), userSetKey(blk, p.User)
		var m [32]byte
		b := binary.BigEndian.AppendUint64(m[:0], uint64(p.User))
		b = binary.BigEndian.AppendUint64(b, uint64(p.TS))
		b = appendF(appendF(b, p.Lat), p.Lon)
		if _, ok := zones[zk]; !ok {
			blockKeys[blk] = append(blockKeys[blk], zk)
		}
		if _, ok := users[uk]; !ok {
			blockKeys[blk] = append(blockKeys[blk], uk)
		}
		zones[zk] = append(zones[zk], redis.Z{Score: float64(p.TS), Member: string(b)})
		users[uk] = append(users[uk], redis.Z{Score: float64(p.TS), Member: string(b[8:])})
	}
	_, err := s.c.TxPipelined(ctx, func(pp redis.Pipeliner) error {
		for k, zs := range zones {
			pp.ZAdd(ctx, k, zs...)
		}
		for k, zs := range users {
			pp.ZAdd(ctx, k, zs...)
		}
		for blk, keys := range blockKeys {
			pp.SAdd(ctx, blockSetKey(blk), keys...)
			pp.ZAdd(ctx, blocksKey, redis.Z{Score: float64(blk), Member: strconv.FormatInt(blk, 10)})
		}
		return nil
	})
	return err
}

// Timeline implements Store.
func (s respStore) Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	if to <= from {
		return nil
	}
	var cmds []*redis.StringSliceCmd
	_, err := s.c.Pipelined(ctx, func(pp redis.Pipeliner) error {
		for blk := Block(from); blk <= Block(to-1); blk++ {
			cmds = append(cmds, pp.ZRangeByScore(ctx, userSetKey(blk, user), &redis.ZRangeBy{Min: strconv.FormatInt(from, 10), Max: "(" + strconv.FormatInt(to, 10)}))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cmds {
		for _, m := range c.Val() {
			if len(m) != 24 {
				return fmt.Errorf("redis: a timeline member of %d bytes, want 24", len(m))
			}
			b := []byte(m)
			if err := fn(Point{User: user, TS: int64(binary.BigEndian.Uint64(b)), Lat: readF(b[8:]), Lon: readF(b[16:])}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Near implements Store: each zone set of a block the track's boxes
// touch, read once over the track's span in the block.
func (s respStore) Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error {
	cells, want := TrackCells(track, meters)
	var cmds []*redis.StringSliceCmd
	_, err := s.c.Pipelined(ctx, func(pp redis.Pipeliner) error {
		for _, c := range cells {
			k := zoneSetKey(c.Block, c.ZX, c.ZY)
			cmds = append(cmds, pp.ZRangeByScore(ctx, k, &redis.ZRangeBy{Min: strconv.FormatInt(c.From, 10), Max: strconv.FormatInt(c.To, 10)}))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cmds {
		for _, m := range c.Val() {
			if len(m) != 32 {
				return fmt.Errorf("redis: a zone member of %d bytes, want 32", len(m))
			}
			b := []byte(m)
			p := Point{User: int64(binary.BigEndian.Uint64(b)), TS: int64(binary.BigEndian.Uint64(b[8:])), Lat: readF(b[16:]), Lon: readF(b[24:])}
			if u, ok := want[p.TS]; !ok || u == p.User {
				continue
			}
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropBlock deletes every key of a block, counting its points first when
// asked (the members of its user sets).
func (s respStore) dropBlock(ctx context.Context, blk int64, count bool) (int64, error) {
	keys, err := s.c.SMembers(ctx, blockSetKey(blk)).Result()
	if err != nil {
		return 0, err
	}
	var points int64
	if count {
		var cards []*redis.IntCmd
		_, err := s.c.Pipelined(ctx, func(pp redis.Pipeliner) error {
			for _, k := range keys {
				if len(k) > 6 && k[:6] == "geo:u:" {
					cards = append(cards, pp.ZCard(ctx, k))
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		for _, c := range cards {
			points += c.Val()
		}
	}
	const chunk = 1000
	for i := 0; i < len(keys); i += chunk {
		if err := s.c.Unlink(ctx, keys[i:min(i+chunk, len(keys))]...).Err(); err != nil {
			return points, err
		}
	}
	if err := s.c.Del(ctx, blockSetKey(blk)).Err(); err != nil {
		return points, err
	}
	return points, s.c.ZRem(ctx, blocksKey, strconv.FormatInt(blk, 10)).Err()
}

// DeleteBefore implements Store: the blocks before the cutoff, whole.
func (s respStore) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	blocks, err := s.c.ZRangeByScore(ctx, blocksKey, &redis.ZRangeBy{Min: "-inf", Max: "(" + strconv.FormatInt(Block(before), 10)}).Result()
	if err != nil {
		return 0, err
	}
	var points int64
	for _, b := range blocks {
		if err := ctx.Err(); err != nil {
			return points, err
		}
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			return points, fmt.Errorf("redis: %s holds %q, not a block", blocksKey, b)
		}
		d, err := s.dropBlock(ctx, n, true)
		points += d
		if err != nil {
			return points, err
		}
	}
	return points, nil
}

// GeoStats implements Store: the user sets of every block.
func (s respStore) GeoStats(ctx context.Context) (count, oldest, newest int64, err error) {
	blocks, err := s.c.ZRange(ctx, blocksKey, 0, -1).Result()
	if err != nil {
		return 0, 0, 0, err
	}
	var ts []int64
	for _, b := range blocks {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("redis: %s holds %q, not a block", blocksKey, b)
		}
		keys, err := s.c.SMembers(ctx, blockSetKey(n)).Result()
		if err != nil {
			return 0, 0, 0, err
		}
		var cards []*redis.IntCmd
		var ends []*redis.ZSliceCmd
		if _, err := s.c.Pipelined(ctx, func(pp redis.Pipeliner) error {
			for _, k := range keys {
				if len(k) > 6 && k[:6] == "geo:u:" {
					cards = append(cards, pp.ZCard(ctx, k))
					ends = append(ends, pp.ZRangeWithScores(ctx, k, 0, 0), pp.ZRangeWithScores(ctx, k, -1, -1))
				}
			}
			return nil
		}); err != nil {
			return 0, 0, 0, err
		}
		for _, c := range cards {
			count += c.Val()
		}
		for _, e := range ends {
			for _, z := range e.Val() {
				ts = append(ts, int64(z.Score))
			}
		}
	}
	if len(ts) > 0 {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		oldest, newest = ts[0], ts[len(ts)-1]
	}
	return count, oldest, newest, nil
}

func init() { conn.AddOwnKeyPrefixes("geo:") }
