package present

import (
	"math"
	"strconv"
)

// Percent writes a fraction as a percentage with at most one decimal: 0.02 is "2%", 0.005
// is "0.5%" (the console's scan budget and re-scan progress, the --scan-budget default).
func Percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}
