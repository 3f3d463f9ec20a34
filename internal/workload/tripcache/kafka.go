package tripcache

import (
	"context"
	"fmt"

	"storebench/internal/workload"
	"storebench/internal/workload/tripcache/tripgen"
)

func startKafka(ctx context.Context, p Params, st workload.Step, cfg tripgen.Config, total uint64) (source, int64, error) {
	return nil, 0, fmt.Errorf("tripcache: the kafka transport is not built yet")
}
