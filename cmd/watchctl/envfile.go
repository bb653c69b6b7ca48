package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// deployedEnv returns a getenv that answers from the process environment
// first and then from the settings the running service was started with, so
// `bin/watchctl` talks to the same database, with the same private-address
// rule, as the programs `make up` started, without the operator exporting
// them again. It reads, in this order of precedence:
//   - deploy/portalwatch.env, the operator's settings file;
//   - deploy/supervisor/run/environment, written by `make up`.
//
// Both are looked for in the checkout that holds the watchctl binary (its
// parent folder, for bin/watchctl) and then in the working directory.
func deployedEnv(getenv func(string) string) func(string) string {
	root := checkoutRoot()
	if root == "" {
		return getenv
	}
	merged := map[string]string{}
	for _, f := range []string{"deploy/supervisor/run/environment", "deploy/portalwatch.env"} {
		for k, v := range readEnvFile(filepath.Join(root, f)) {
			merged[k] = v
		}
	}
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return merged[name]
	}
}

func checkoutRoot() string {
	var candidates []string
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Dir(filepath.Dir(exe)))
	}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, wd)
	}
	for _, dir := range candidates {
		if _, err := os.Stat(filepath.Join(dir, "deploy", "supervisor", "supervisord.conf")); err == nil {
			return dir
		}
	}
	return ""
}

// readEnvFile reads KEY=VALUE lines, skipping blanks and # comments and
// removing one pair of surrounding quotes. A missing file is empty.
func readEnvFile(path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[strings.TrimSpace(k)] = v
	}
	return env
}
