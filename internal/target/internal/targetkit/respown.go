package targetkit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"storebench/internal/target"
)

// RESPOccupancy counts the keys of c's database, and those under prefixes.
func RESPOccupancy(ctx context.Context, c *redis.Client, prefixes []string) (target.Occupancy, error) {
	o := target.Occupancy{Unit: "keys", OwnNames: prefixes}
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		return o, err
	}
	for _, p := range prefixes {
		err := scan(ctx, c, p, func(keys []string) error { o.Own += int64(len(keys)); return nil })
		if err != nil {
			return o, err
		}
	}
	o.Foreign = max(n-o.Own, 0)
	return o, nil
}

// RESPDeleteOwn unlinks the keys of c's database under prefixes, one key per
// UNLINK (in a pipeline: keys of a cluster node may sit in different
// slots), leaving every other key alone.
func RESPDeleteOwn(ctx context.Context, c *redis.Client, prefixes []string) error {
	for _, p := range prefixes {
		err := scan(ctx, c, p, func(keys []string) error {
			pl := c.Pipeline()
			for _, k := range keys {
				pl.Unlink(ctx, k)
			}
			_, err := pl.Exec(ctx)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// scan calls f with each batch of the keys under prefix (SCAN MATCH,
// the prefix's glob characters escaped).
func scan(ctx context.Context, c *redis.Client, prefix string, f func([]string) error) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, globEscape(prefix)+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := f(keys); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
