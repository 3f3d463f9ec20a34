package http_test

import (
	"os"
	"strconv"
	"testing"

	httpwl "storebench/internal/workload/http"
)

func TestZZProf(t *testing.T) {
	uri := os.Getenv("ZZ_URI")
	if uri == "" {
		return
	}
	n, _ := strconv.Atoi(os.Getenv("ZZ_N"))
	h := open(t, "http", uri, nil)
	s, err := step(t, h, os.Getenv("ZZ_PHASE"), 100, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v ops %.0f rps, %s", s.Ops, s.Metrics[httpwl.MRPS], s.Facts[httpwl.FactClient])
}
