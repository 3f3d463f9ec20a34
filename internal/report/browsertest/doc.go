// Package browsertest proves report.html in a real browser: its test runs
// a small study on real embedded engines, opens the run's report.html in
// headless Chromium (Debian's chromium, installed by
// scripts/install-browser.sh) and fails on any console error, uncaught
// exception, failed request or request for anything but the file itself,
// and on any chart that did not render with data. It saves a full-page
// screenshot as a test artefact.
package browsertest
