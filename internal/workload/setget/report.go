package setget

import "storebench/internal/report/section"

// No tables of its own: the report shows the generic table of its steps
// and these metrics.
func init() {
	section.Register("setget", section.Def{Metrics: []section.Metric{
		{Name: "requests", Agg: section.Sum, What: "requests sent"},
		{Name: "requests_per_s", Unit: "requests/s", Agg: section.Rate, Better: section.Higher, What: "requests per second (redis-benchmark's figure)"},
		{Name: "pipeline", Agg: section.Max, What: "requests per pipeline"},
		{Name: "connections", Agg: section.Max, What: "client connections"},
		{Name: "event_loops", Agg: section.Max, What: "event loops driving the connections (0: a goroutine per connection)"},
	}})
}
