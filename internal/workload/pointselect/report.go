package pointselect

import "storebench/internal/report/section"

// No tables of its own: the report shows the generic table of its steps
// and these metrics.
func init() {
	section.Register("pointselect", section.Def{Metrics: []section.Metric{
		{Name: "tps", Unit: "selects/s", Agg: section.Rate, Better: section.Higher, What: "selects per second (pgbench's tps)"},
		{Name: "connections", Agg: section.Max, What: "client connections"},
		{Name: "event_loops", Agg: section.Max, What: "event loops driving the connections (0: a goroutine per connection)"},
	}})
}
