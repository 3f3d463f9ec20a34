// Package mdhtml converts the Markdown storebench's reports are written in
// to HTML, so report.html carries every section report.md has, including
// those a new workload registers, without a second renderer per table.
//
// The conversion is goldmark's (CommonMark with GitHub tables); this
// package holds only the report's configuration of it:
//   - headings get IDs for the table of contents: lower-case letters and
//     digits joined by dashes, "-2", "-3", ... for repeats;
//   - raw HTML is text: the reports put names, settings and error messages
//     into their Markdown unescaped, so a tag is shown, never obeyed. Only
//     <br> (line breaks in table cells) and HTML comments (markers a caller
//     puts in the Markdown to find in the HTML) pass through;
//   - a table is wrapped in <div class="table"> so that the page's style
//     lets it scroll sideways rather than squeeze;
//   - link targets other than web, mail, anchors and relative paths are
//     dropped (goldmark's default).
package mdhtml

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Heading is one heading of the document, for a table of contents.
type Heading struct {
	Level int
	ID    string
	// HTML is the heading's inline content, already converted.
	HTML string
}

var md = goldmark.New(
	goldmark.WithExtensions(extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignStyle))),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(reportRenderer{}, 10))),
)

var headingRe = regexp.MustCompile(`(?s)<h([1-6]) id="([^"]*)">(.*?)</h[1-6]>\n`)

// Convert renders Markdown as an HTML fragment and lists its headings.
// Heading IDs are unique within one call.
func Convert(src string) (string, []Heading) {
	var out bytes.Buffer
	ctx := parser.NewContext(parser.WithIDs(&ids{seen: map[string]int{}}))
	if err := md.Convert([]byte(src), &out, parser.WithContext(ctx)); err != nil {
		// Rendering into memory fails only on a bug; show the text rather
		// than nothing.
		return "<pre>" + html.EscapeString(src) + "</pre>\n", nil
	}
	body := out.String()
	var heads []Heading
	for _, m := range headingRe.FindAllStringSubmatch(body, -1) {
		heads = append(heads, Heading{Level: int(m[1][0] - '0'), ID: m[2], HTML: m[3]})
	}
	return body, heads
}

// ids makes heading IDs from the heading's text.
type ids struct{ seen map[string]int }

func (s *ids) Generate(value []byte, _ ast.NodeKind) []byte {
	id := slug(string(value))
	n := s.seen[id] + 1
	s.seen[id] = n
	if n > 1 {
		id = fmt.Sprintf("%s-%d", id, n)
	}
	return []byte(id)
}

func (s *ids) Put(value []byte) { s.seen[string(value)]++ }

// slug makes an anchor ID from heading text: lower case letters and
// digits joined by dashes.
func slug(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

// reportRenderer renders raw HTML as text (but <br> and comments) and
// wraps tables; everything else is goldmark's.
type reportRenderer struct{}

func (reportRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	// goldmark's own table renderer, with the <div> around it.
	var table renderer.NodeRendererFunc
	extension.NewTableHTMLRenderer(extension.WithTableCellAlignMethod(extension.TableCellAlignStyle)).
		RegisterFuncs(registerer(func(k ast.NodeKind, f renderer.NodeRendererFunc) {
			if k == extast.KindTable {
				table = f
			}
		}))
	reg.Register(extast.KindTable, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			_, _ = w.WriteString(`<div class="table">`)
		}
		st, err := table(w, src, n, entering)
		if !entering {
			_, _ = w.WriteString("</div>\n")
		}
		return st, err
	})
}

type registerer func(ast.NodeKind, renderer.NodeRendererFunc)

func (r registerer) Register(k ast.NodeKind, f renderer.NodeRendererFunc) { r(k, f) }

var brRe = regexp.MustCompile(`(?i)^<br\s*/?>$`)

func renderRawHTML(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	raw := segments(node.(*ast.RawHTML).Segments, src)
	switch {
	case brRe.Match(raw):
		_, _ = w.WriteString("<br>")
	case bytes.HasPrefix(raw, []byte("<!--")):
		writeComment(w, raw)
	default:
		_, _ = w.WriteString(html.EscapeString(string(raw)))
	}
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock keeps a comment and shows any other block of HTML as a
// paragraph of text.
func renderHTMLBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.HTMLBlock)
	raw := segments(n.Lines(), src)
	if n.HasClosure() {
		raw = append(raw, n.ClosureLine.Value(src)...)
	}
	raw = bytes.TrimSpace(raw)
	if n.HTMLBlockType == ast.HTMLBlockType2 && bytes.HasSuffix(raw, []byte("-->")) && bytes.Count(raw, []byte("-->")) == 1 {
		writeComment(w, raw)
		_ = w.WriteByte('\n')
		return ast.WalkSkipChildren, nil
	}
	_, _ = w.WriteString("<p>" + html.EscapeString(string(raw)) + "</p>\n")
	return ast.WalkSkipChildren, nil
}

// writeComment writes <!--...--> with no "--" inside, so the comment
// ends where it seems to.
func writeComment(w util.BufWriter, raw []byte) {
	inner := strings.TrimSuffix(strings.TrimPrefix(string(raw), "<!--"), "-->")
	_, _ = w.WriteString("<!--" + strings.ReplaceAll(inner, "--", "") + "-->")
}

func segments(s *text.Segments, src []byte) []byte {
	var b []byte
	for i := range s.Len() {
		seg := s.At(i)
		b = append(b, seg.Value(src)...)
	}
	return b
}
