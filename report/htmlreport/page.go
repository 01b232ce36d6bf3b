// Package htmlreport renders a run's report, or a bench, as one
// self-contained HTML page that people open in a browser: it loads
// nothing (its Content-Security-Policy forbids it) and runs no script.
// Every chart is an SVG with a text alternative (its title and
// description, and a table of what it draws), and colour is never the
// only sign: each answer has its shape and its word.
//
// Typical usage, beside the JSON report:
//
//	f, _ := os.Create("rlconform.html")
//	defer f.Close()
//	err := htmlreport.Run(f, rep, report.Meta{Version: v})
package htmlreport

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"
)

//go:embed page.css
var css string

//go:embed page.html
var pageHTML string

// pages are the page templates: "run" and "bench".
var pages = template.Must(template.New("page").Funcs(template.FuncMap{
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(pageHTML))

// head is what every page's head and footer say.
type head struct {
	Title, Version string
	CSP            string
	CSS            template.CSS
}

// newHead is the head of a page titled title: its style sheet inline,
// the only one the page's policy lets apply (by its hash), and nothing
// loaded but the images it embeds as data: URLs.
func newHead(title, version string) head {
	sum := sha256.Sum256([]byte(css))
	csp := fmt.Sprintf("default-src 'none'; style-src 'sha256-%s'; img-src data:; base-uri 'none'; form-action 'none'",
		base64.StdEncoding.EncodeToString(sum[:]))
	return head{Title: title, Version: version, CSP: csp, CSS: template.CSS(css)}
}

// verdictView is a verdict line: its badge (a word, never a colour
// alone) and its class.
type verdictView struct {
	Class, Badge, Line string
}

// Fact is one line of a page's facts: a label and its value.
type Fact struct {
	Label, Value string
	// Mono shows the value in a fixed-width font (an address, a seed).
	Mono bool
}

// write executes the page template name with data into w, whole or not
// at all.
func write(w io.Writer, name string, data any) error {
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("rendering the %s page: %w", name, err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// anchor is an id made of s for the page: letters, digits and dashes.
func anchor(prefix, s string) string {
	return prefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}
