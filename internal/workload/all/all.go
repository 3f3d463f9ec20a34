// Package all links in every workload: importing it registers each one
// (workload.Register) and what it registers about its results (package
// report/section: tables, headline, typed metrics). The coordinator and
// the worker are one binary, so this one list serves both. A new workload
// is one line here.
package all

import (
	_ "storebench/internal/workload/adsrw"
	_ "storebench/internal/workload/documents"
	_ "storebench/internal/workload/durability"
	_ "storebench/internal/workload/geo"
	_ "storebench/internal/workload/http"
	_ "storebench/internal/workload/ledger"
	_ "storebench/internal/workload/oltp"
	_ "storebench/internal/workload/pointselect"
	_ "storebench/internal/workload/setget"
	_ "storebench/internal/workload/tokens"
	_ "storebench/internal/workload/tripcache"
	_ "storebench/internal/workload/ycsb"
)
