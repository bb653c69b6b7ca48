package main

import (
	"fmt"
	"regexp"
)

// validPattern checks an ignore pattern the way the crawler will compile it.
func validPattern(p string) error {
	if p == "" {
		return fmt.Errorf("an empty pattern would ignore every link")
	}
	if _, err := regexp.Compile(p); err != nil {
		return fmt.Errorf("not a valid regular expression (RE2 syntax): %v", err)
	}
	return nil
}
