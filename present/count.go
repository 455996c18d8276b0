package present

import "strconv"

// Count is n with its noun in the right number: "1 lock", "2 locks", "0 locks".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
