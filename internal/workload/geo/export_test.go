package geo

// For the tests of package geo_test (the server targets, whose
// conformance checks import this package).
var (
	SmallStudy = smallStudy
	Execute    = execute
	CheckRun   = checkRun
)
