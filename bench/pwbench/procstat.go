package pwbench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procStat is what pwbench reads from /proc/<pid>/stat.
type procStat struct {
	comm          string
	ppid          int
	utime, stime  uint64 // this process, all threads, in ticks
	cutime, ctime uint64 // waited-for children, in ticks
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[close+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	num := func(i int) uint64 { n, _ := strconv.ParseUint(f[i], 10, 64); return n }
	ppid, _ := strconv.Atoi(f[1])
	return procStat{comm: string(b[open+1 : close]), ppid: ppid,
		utime: num(11), stime: num(12), cutime: num(13), ctime: num(14)}, nil
}

// peakRSS returns a process's peak resident set (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// cpuMeter samples the CPU time of pwbench's own programs (by pid) and of
// the services they use, found by command name: beam.smp (RabbitMQ),
// postgres (the postmaster and every backend, plus the postmaster's reaped
// children, so backends that come and go are counted too) and redis-server.
// The services may also be serving others on a shared machine; their figures
// are an upper bound of what this run cost them.
type cpuMeter struct {
	programs func() []*process
	// pgPIDs, when set, narrows postgres to these pids (the run database's
	// backends and the server's own auxiliary processes), so other
	// databases' work on a shared server is not counted.
	pgPIDs func() map[int]bool
}

// cpuSample holds CPU seconds by process, and the machine's busy and total
// seconds across all cores.
type cpuSample struct {
	byPID       map[int]pidCPU
	machineBusy float64
	machineAll  float64
}

// pidCPU is one process's CPU seconds so far and its group.
type pidCPU struct {
	group string
	secs  float64
}

// cpuDelta is the CPU seconds spent by group between two samples.
type cpuDelta struct {
	byGroup     map[string]float64
	machineBusy float64
	machineAll  float64
}

var serviceComms = map[string]string{"beam.smp": "rabbitmq", "postgres": "postgres", "redis-server": "redis"}

func (m cpuMeter) sample() cpuSample {
	s := cpuSample{byPID: map[int]pidCPU{}}
	secs := func(t uint64) float64 { return float64(t) / clockTicks }
	add := func(pid int, group string, v float64) {
		s.byPID[pid] = pidCPU{group: group, secs: s.byPID[pid].secs + v}
	}
	if m.programs != nil {
		for _, p := range m.programs() {
			if st, err := readProcStat(p.Pid()); err == nil {
				add(p.Pid(), p.kind, secs(st.utime+st.stime))
			}
		}
	}
	if st, err := readProcStat(os.Getpid()); err == nil {
		add(os.Getpid(), "pwbench", secs(st.utime+st.stime))
	}
	var pgOnly map[int]bool
	if m.pgPIDs != nil {
		pgOnly = m.pgPIDs()
	}
	entries, _ := os.ReadDir("/proc")
	stats := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue
		}
		if _, ok := serviceComms[st.comm]; ok {
			stats[pid] = st
		}
	}
	for pid, st := range stats {
		group := serviceComms[st.comm]
		switch group {
		case "rabbitmq":
			// Only the broker: rabbitmqctl and friends run a beam.smp too.
			if !isRabbitServer(pid) {
				continue
			}
		case "postgres":
			postmaster := false
			if parent, ok := stats[st.ppid]; !ok || parent.comm != "postgres" {
				postmaster = true
			}
			if pgOnly != nil && !pgOnly[pid] && !postmaster {
				continue
			}
			// The postmaster has reaped the backends that exited: their
			// CPU is in its children's times. Counted only when every
			// backend is, as their share of it is unknown.
			if postmaster && pgOnly == nil {
				add(pid, group, secs(st.cutime+st.ctime))
			}
		}
		add(pid, group, secs(st.utime+st.stime))
	}
	s.machineBusy, s.machineAll = machineCPU()
	return s
}

// sub returns the CPU seconds spent between an earlier sample and s, by
// group, over the processes present in both: a process that came or went in
// between (a second broker node a test starts, a CLI tool) is left out
// rather than counted with the CPU of its whole life.
func (s cpuSample) sub(earlier cpuSample) cpuDelta {
	d := cpuDelta{byGroup: map[string]float64{},
		machineBusy: s.machineBusy - earlier.machineBusy, machineAll: s.machineAll - earlier.machineAll}
	for pid, now := range s.byPID {
		if then, ok := earlier.byPID[pid]; ok && then.group == now.group {
			d.byGroup[now.group] += now.secs - then.secs
		}
	}
	return d
}

// machineCPU reads /proc/stat: seconds busy and seconds in total, summed
// over every core.
func machineCPU() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i >= 7 { // guest times are already counted in user
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / clockTicks, total / clockTicks
}

// isRabbitServer reports whether the beam.smp with this pid is a RabbitMQ
// node ("-s rabbit boot"), not a CLI tool.
func isRabbitServer(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte("rabbit\x00boot"))
}
