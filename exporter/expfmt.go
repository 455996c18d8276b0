package exporter

import (
	"bufio"
	"math"
	"strconv"
	"strings"
)

// expfmt writes the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): a family's HELP and TYPE
// lines, then its samples, every family's lines together. The root module writes it itself:
// an importer of locklib must not download a metrics client with it.
type expfmt struct {
	w   *bufio.Writer
	buf []byte // one line, reused
}

// ContentType is the Content-Type of the text format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// label is one name="value" pair of a sample.
type label struct{ name, value string }

// family starts a metric family: its HELP (escaped) and TYPE lines.
func (x *expfmt) family(name, typ, help string) {
	b := append(x.buf[:0], "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	b = append(b, '\n')
	x.buf = b
	_, _ = x.w.Write(b) // a write error stays in the bufio.Writer: Flush returns it
}

// sample writes one sample line: name{labels} value.
func (x *expfmt) sample(name string, value float64, labels ...label) {
	b := append(x.buf[:0], name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.name...)
			b = append(b, `="`...)
			b = appendEscaped(b, l.value, true)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendValue(b, value)
	b = append(b, '\n')
	x.buf = b
	_, _ = x.w.Write(b)
}

// appendEscaped escapes s as the format asks: in HELP text a backslash and a line feed, in a
// label value a double quote as well.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendValue writes a sample value as Go's ParseFloat reads it back: integers without an
// exponent, +Inf, -Inf and NaN as the format spells them.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
