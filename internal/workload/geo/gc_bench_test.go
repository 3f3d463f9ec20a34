package geo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/target/targettest"
)

// BenchmarkPointGCBesideIngest is geo-backtracer's point-by-point GC
// (one delete per key) on RocksDB in its layout, for 10 s, while four
// ingest goroutines insert requests of 1,000 points: none, each request one
// atomic batch (ingest.write: batch), or each key a Put of its own
// (ingest.write: point, pusher.cc's way). It reports the GC's points
// deleted a second and the ingest's points inserted a second. Run with
// -tags rocksdb -benchtime 1x: docs/geo.md quotes a kept run.
func BenchmarkPointGCBesideIngest(b *testing.B) {
	const (
		users      = 2000
		old        = 300 // minutes filled before the GC runs: 600,000 points
		goroutines = 4
		request    = 1000
		gcFor      = 10 * time.Second
	)
	for _, mode := range []string{"none", WriteBatch, WritePoint} {
		b.Run("ingest="+mode, func(b *testing.B) {
			for range b.N {
				h := targettest.Open(b, "rocksdb", kv.Async)
				s := h.(kv.Store)
				sim := Sim{Seed: 7, Users: users, GroupSize: 4}
				fill := BTLayout{S: s}
				ctx := context.Background()
				var pts []Point
				for i := int64(0); i < old*users; i++ {
					pts = append(pts, sim.Index(i))
					if len(pts) == request {
						if err := fill.InsertPoints(ctx, pts); err != nil {
							b.Fatal(err)
						}
						pts = pts[:0]
					}
				}
				ingest := Store(BTLayout{S: s})
				if mode == WritePoint {
					ingest = BTLayout{S: s, PointWrites: true}
				}
				var stop atomic.Bool
				var inserted atomic.Int64
				var wg sync.WaitGroup
				next := atomic.Int64{}
				next.Store(old * users / request)
				if mode != "none" {
					for range goroutines {
						wg.Add(1)
						go func() {
							defer wg.Done()
							buf := make([]Point, 0, request)
							for !stop.Load() {
								r := next.Add(1) - 1
								buf = buf[:0]
								for i := r * request; i < (r+1)*request; i++ {
									buf = append(buf, sim.Index(i))
								}
								if err := ingest.InsertPoints(ctx, buf); err != nil {
									b.Error(err)
									return
								}
								inserted.Add(request)
							}
						}()
					}
				}
				gc := BTLayout{S: s, PointByPoint: true}
				pass, cancel := context.WithTimeout(ctx, gcFor)
				t0 := time.Now()
				n, err := gc.DeleteBefore(pass, TS(old))
				el := time.Since(t0)
				cancel()
				stop.Store(true)
				wg.Wait()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n)/el.Seconds(), "deleted/s")
				b.ReportMetric(float64(inserted.Load())/el.Seconds(), "inserted/s")
			}
		})
	}
}
