package report

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"storebench/internal/results"
	"storebench/internal/safefile"
)

// ChartsDir is where the PNG charts go, next to report.md.
const ChartsDir = "charts"

// ChartsManifest, in ChartsDir, lists the PNGs the last rendering wrote,
// one a line: the next one deletes those it no longer draws, and no other
// file.
const ChartsManifest = ".storebench-charts"

// WriteAll writes a run's reports into dir: report.md (with PNG charts
// from charts/), report.html (self-contained, charts inline) and the
// PNGs. The coordinator calls it after every target and at the end of a
// run, `storebench report DIR` to re-render. A chart that fails to draw
// is reported in report.html in its place and does not stop the others;
// only a file that cannot be written is an error.
func WriteAll(dir string, run *results.Run) error {
	charts := Charts(run)
	figs := make([]drawn, len(charts))
	pngs := make([][]byte, len(charts))
	// Charts are independent: draw them on every core. One chart of a
	// big run takes tens of milliseconds (PNG rasterising most of it).
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, c := range charts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			svg, err := c.SVG()
			figs[i] = drawn{chart: c, svg: svg, err: err}
			if err == nil && c.Key {
				pngs[i], figs[i].err = c.PNG()
			}
		}()
	}
	wg.Wait()

	// charts/ is made here, or must be a directory already: never a
	// symbolic link, through which the PNGs would be written (and the
	// stale ones deleted) in a directory elsewhere.
	cdir := filepath.Join(dir, ChartsDir)
	if err := safefile.Mkdir(cdir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	files := map[string]string{}
	keep := map[string]bool{}
	var errs []error
	for i, c := range charts {
		if pngs[i] == nil {
			continue
		}
		name := c.ID + ".png"
		keep[name] = true // this rendering's, written or not
		if err := writeFile(filepath.Join(cdir, name), pngs[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		files[c.ID] = ChartsDir + "/" + name
	}
	// PNGs of an earlier rendering that this one no longer draws would
	// otherwise linger beside the report. Only those an earlier rendering
	// listed in the manifest go: a PNG of the user's in charts/ (report
	// --out onto a directory of theirs) stays.
	if b, err := safefile.ReadRegular(cdir, ChartsManifest, 1<<20); err == nil {
		for _, name := range strings.Split(string(b), "\n") {
			if strings.HasSuffix(name, ".png") && !keep[name] {
				_ = safefile.RemoveRegular(cdir, name)
			}
		}
	}
	names := make([]string, 0, len(keep))
	for name := range keep {
		names = append(names, name)
	}
	sort.Strings(names)
	if err := writeFile(filepath.Join(cdir, ChartsManifest), []byte(strings.Join(names, "\n")+"\n")); err != nil {
		errs = append(errs, err)
	}
	if err := writeFile(filepath.Join(dir, "report.md"), []byte(markdownWithCharts(run, charts, files))); err != nil {
		errs = append(errs, err)
	}
	if err := writeFile(filepath.Join(dir, "report.html"), htmlWith(run, figs)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeFile replaces a file whole (a reader never sees half a report).
func writeFile(path string, b []byte) error {
	if err := results.WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
