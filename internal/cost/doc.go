// Package cost projects what a measured run would cost: machines, their
// count and a monthly bill for a user's load (issue 36), from a catalog
// of machine types (Catalog) and a model fitted to the run's own
// measurements (Model), checked against a measured shape it did not see.
package cost
