// Package exportertest reads the exporter's output back for tests: every sample by its
// series as printed, after checking the text against the exposition format's rules.
package exportertest

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Samples are the samples of one scrape by series, as printed: `name{a="x",b="y"}`.
type Samples map[string]float64

// Groups are the distinct values of the group label among the samples.
func (s Samples) Groups() map[string]bool {
	out := map[string]bool{}
	for series := range s {
		if m := groupLabel.FindStringSubmatch(series); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

var groupLabel = regexp.MustCompile(`[{,]group="((?:[^"\\]|\\.)*)"`)

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$`)
	metaLine   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)
)

// Parse checks text against the text format 0.0.4 (HELP and TYPE once per family and before
// its samples, a family's lines together, label values escaped, values that parse, a
// histogram's buckets cumulative and ending with le="+Inf" equal to _count) and returns its
// samples. A violation fails the test.
func Parse(tb testing.TB, text string) Samples {
	tb.Helper()
	out := Samples{}
	types := map[string]string{}
	helped := map[string]bool{}
	done := map[string]bool{} // families whose lines have ended
	current := ""
	lastBucket := map[string]float64{} // histogram series without le → last cumulative count
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if m := metaLine.FindStringSubmatch(line); m != nil {
			family := m[2]
			if family != current {
				if done[family] {
					tb.Fatalf("line %d: family %s again after other families:\n%s", i+1, family, line)
				}
				if current != "" {
					done[current] = true
				}
				current = family
			}
			if m[1] == "TYPE" {
				if _, dup := types[family]; dup {
					tb.Fatalf("line %d: a second TYPE of %s", i+1, family)
				}
				types[family] = m[3]
			} else {
				helped[family] = true
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			tb.Fatalf("line %d is not a sample: %q", i+1, line)
		}
		name, labels, value := m[1], m[2], m[3]
		family := name
		if types[current] == "histogram" {
			family = current
			if !strings.HasPrefix(name, current+"_") {
				tb.Fatalf("line %d: %s within histogram %s", i+1, name, current)
			}
		}
		if family != current || types[family] == "" || !helped[family] {
			tb.Fatalf("line %d: sample of %s without its HELP and TYPE just before", i+1, name)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			tb.Fatalf("line %d: value %q: %v", i+1, value, err)
		}
		series := name + labels
		if _, dup := out[series]; dup {
			tb.Fatalf("line %d: series %s twice", i+1, series)
		}
		out[series] = v
		if strings.HasSuffix(name, "_bucket") && types[current] == "histogram" {
			without, le := withoutLE(labels)
			if v < lastBucket[without] {
				tb.Fatalf("line %d: bucket %s below the one before", i+1, series)
			}
			lastBucket[without] = v
			if le == "+Inf" {
				countSeries := current + "_count" + without
				defer func() {
					if c, ok := out[countSeries]; !ok || c != v {
						tb.Errorf("%s = %v, want its +Inf bucket's %v", countSeries, c, v)
					}
				}()
			}
		}
	}
	return out
}

// withoutLE is a bucket's labels without its le label (always the last), and le's value.
func withoutLE(labels string) (rest, le string) {
	at := strings.LastIndex(labels, `le="`)
	if at < 1 {
		return labels, ""
	}
	le = strings.TrimSuffix(labels[at+len(`le="`):], `"}`)
	if rest = labels[:at-1]; rest == "" {
		return "", le
	}
	return rest + "}", le
}

// Get fetches url and returns its status and body.
func Get(tb testing.TB, url string) (int, string) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// Scrape fetches base+"/metrics" and parses it.
func Scrape(tb testing.TB, base string) Samples {
	tb.Helper()
	code, body := Get(tb, base+"/metrics")
	if code != http.StatusOK {
		tb.Fatalf("GET %s/metrics: %d %s", base, code, body)
	}
	return Parse(tb, body)
}
