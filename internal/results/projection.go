package results

// Projection is what a run's measurements project for a user's load and
// data (issue 36): per target, the cheapest machines of a catalog that
// carry it and their monthly cost. Every figure in it is a projection,
// not a measurement; each plan says what it rests on, how far past the
// measures it reaches and how well the model predicted a measured shape
// it did not see. Package cost makes it.
type Projection struct {
	// Catalog is the catalog's name, Currency its prices', CatalogDate
	// when it was transcribed.
	Catalog     string `json:"catalog"`
	Currency    string `json:"currency"`
	CatalogDate string `json:"catalog_date"`
	// Sizing is the load and data sized for, as given.
	Sizing Sizing       `json:"sizing"`
	Plans  []TargetPlan `json:"plans"`
	// Curve is the cheapest monthly cost of each target at multiples of
	// the sizing's load (the report's chart).
	Curve []CostPoint `json:"curve,omitempty"`
}

// CostPoint is one target's cheapest option at one load.
type CostPoint struct {
	Target  string  `json:"target"`
	Load    float64 `json:"load_ops_per_s"`
	Monthly float64 `json:"monthly"`
	Machine string  `json:"machine"`
	Count   int     `json:"count"`
}

// Sizing is a user's load and data, and what a machine must meet.
type Sizing struct {
	// Load is the operations per second to carry.
	Load float64 `json:"load_ops_per_s"`
	// Mix is each step kind's share of Load ("ycsb/a": 0.6); empty: equal
	// shares of every kind the run measured.
	Mix map[string]float64 `json:"mix,omitempty"`
	// Items is the data in items (the ladder's N); DataBytes, instead,
	// the data as the workload writes it (items: its size over the size
	// of one item the workload reports, item_bytes).
	Items     float64 `json:"items,omitempty"`
	DataBytes float64 `json:"data_bytes,omitempty"`
	// Replicas is the copies of the data, each on machines of its own
	// carrying the whole load of its shard.
	Replicas int `json:"replicas"`
	// GrowthPerMonth is the share of data and load added each month.
	GrowthPerMonth float64 `json:"growth_per_month,omitempty"`
	// P99 is the highest p99 latency allowed, in seconds (0: none).
	P99 float64 `json:"p99_s,omitempty"`
	// Utilisation is the share of a machine's CPU the load may use.
	Utilisation float64 `json:"cpu_utilisation"`
	// MaxMachines bounds the count: a plan needing more is refused.
	MaxMachines int `json:"max_machines"`
}

// TargetPlan is one target's projection.
type TargetPlan struct {
	Target   string  `json:"target"`
	Title    string  `json:"title"`
	Currency string  `json:"currency"`
	Items    float64 `json:"items"`
	// Reason, when set, is why no machine of the catalog carries it.
	Reason       string     `json:"reason,omitempty"`
	Best         *Option    `json:"best,omitempty"`
	PerMillion   float64    `json:"cost_per_million_ops,omitempty"`
	OpsPerUnit   float64    `json:"ops_per_currency_unit,omitempty"`
	NextMonth    int        `json:"next_machine_month,omitempty"`
	Mix          []MixShare `json:"mix"`
	Inputs       []string   `json:"inputs"`
	HeldOut      []HeldOut  `json:"held_out,omitempty"`
	HeldOutError float64    `json:"held_out_error,omitempty"`
	// Warn says the held-out error is above the bound, or that no
	// held-out check could be made.
	Warn     string   `json:"warning,omitempty"`
	Rejected []Option `json:"rejected,omitempty"`
}

// MixShare is one step kind's share of the load.
type MixShare struct {
	Kind  string  `json:"kind"`
	Share float64 `json:"share"`
}

// MachineType is a catalog's line as a plan uses it.
type MachineType struct {
	Name      string  `json:"name"`
	VCPUs     float64 `json:"vcpus"`
	RAMBytes  int64   `json:"ram_bytes"`
	DiskBytes int64   `json:"disk_bytes"`
	DiskIOPS  float64 `json:"disk_iops,omitempty"`
	Hourly    float64 `json:"hourly"`
	Source    string  `json:"source"`
	Date      string  `json:"date"`
}

// Option is one machine type's count and cost for a target, or why it
// cannot carry the load (Reason).
type Option struct {
	Machine  MachineType `json:"machine"`
	Shards   int         `json:"shards,omitempty"`
	Count    int         `json:"count,omitempty"`
	Monthly  float64     `json:"monthly,omitempty"`
	Deciding string      `json:"deciding,omitempty"`
	Needs    []Need      `json:"needs,omitempty"`
	P99      float64     `json:"p99_s,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	// Extent says how far the option reaches past what was measured.
	Extent []string `json:"extent,omitempty"`
}

// Need is what one resource asks of a machine type: the shards of the
// data it takes for that resource alone (0: not checked), and why.
type Need struct {
	Resource string `json:"resource"`
	Shards   int    `json:"shards"`
	Detail   string `json:"detail"`
}

// HeldOut is one measured shape's throughput and p99, predicted by the
// model fitted without it.
type HeldOut struct {
	Kind         string  `json:"kind"`
	Machine      string  `json:"machine"`
	VCPUs        float64 `json:"vcpus"`
	MeasuredOps  float64 `json:"measured_ops_per_s"`
	PredictedOps float64 `json:"predicted_ops_per_s"`
	MeasuredP99  float64 `json:"measured_p99_s"`
	PredictedP99 float64 `json:"predicted_p99_s"`
	// Fitted is how many shapes the prediction was fitted to (1: linear
	// in vCPUs assumed).
	Fitted int `json:"fitted_to"`
}

// OpsError is the throughput prediction's relative error.
func (h HeldOut) OpsError() float64 { return (h.PredictedOps - h.MeasuredOps) / h.MeasuredOps }

// P99Error is the p99 prediction's relative error (0 when not measured).
func (h HeldOut) P99Error() float64 {
	if h.MeasuredP99 <= 0 {
		return 0
	}
	return (h.PredictedP99 - h.MeasuredP99) / h.MeasuredP99
}
