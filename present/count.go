package present

import "strconv"

// Count is n followed by noun, in the plural unless n is 1: "1 lock", "0 locks", "2 records".
// noun is a regular English noun, made plural with an s. Every count the CLI and the console
// print in words goes through it.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
