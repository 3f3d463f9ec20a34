package geo

import (
	"context"
	"os"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/target/targettest"
)

func TestGCExpFinal(t *testing.T) {
	if os.Getenv("GCEXP") == "" {
		t.Skip()
	}
	sim := Sim{Seed: 9, Users: 10000, GroupSize: 4}
	const minutes = 300
	h := targettest.Open(t, "rocksdb", kv.Async)
	s := h.(kv.Store)
	l := BTLayout{S: s, PointByPoint: true}
	ctx := context.Background()
	if _, err := l.PrepareGeo(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var pts []Point
	for i := int64(0); i < minutes*sim.Users; i++ {
		pts = append(pts, sim.Index(i))
		if len(pts) == 1000 {
			if err := l.InsertPoints(ctx, pts); err != nil {
				t.Fatal(err)
			}
			pts = pts[:0]
		}
	}
	t.Logf("insert %d in %s", minutes*sim.Users, time.Since(t0))
	t0 = time.Now()
	n, err := l.DeleteBefore(ctx, TS(minutes))
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(t0)
	t.Logf("deleted %d in %s = %.0f/s", n, el, float64(n)/el.Seconds())
}
