package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"storebench/internal/results"
)

// ChartsDir is where the PNG charts go, next to report.md.
const ChartsDir = "charts"

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

	cdir := filepath.Join(dir, ChartsDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
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
		if err := writeFile(filepath.Join(cdir, name), pngs[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		files[c.ID] = ChartsDir + "/" + name
		keep[name] = true
	}
	// PNGs of an earlier rendering that this one no longer draws would
	// otherwise linger beside the report.
	if ents, err := os.ReadDir(cdir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".png") && !keep[e.Name()] {
				os.Remove(filepath.Join(cdir, e.Name()))
			}
		}
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
