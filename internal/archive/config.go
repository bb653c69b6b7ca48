package archive

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
)

// Config is the archive's settings, shared by the programs that write
// (crawler), index and sweep (processor) and read (web, watchctl) it.
type Config struct {
	// Enabled archives the page as fetched for every check that records
	// something; false archives nothing (the crawler asks for no capture),
	// which is how `make bench-ab` compares the two. Default true.
	Enabled bool `env:"PORTALWATCH_ARCHIVE"`
	// DataDir is portalwatch's persistent data directory, never a
	// temporary one. Default DefaultDataDir; `make up` records one.
	DataDir string `env:"PORTALWATCH_DATA_DIR"`
	// Dir is the archive's directory: DataDir/archive when empty. Every
	// program that writes or reads the archive must see the same files:
	// on several hosts, a shared volume (README).
	Dir string `env:"PORTALWATCH_ARCHIVE_DIR"`
	// FileBytes is the size at which a WARC file is sealed and the next
	// one started, 1 MiB to 64 GiB. Default DefaultFileBytes, 1 GiB.
	FileBytes int64 `env:"PORTALWATCH_ARCHIVE_FILE_BYTES"`
	// Retention deletes snapshots fetched longer ago (an original that a
	// newer revisit refers to stays with it); zero keeps them, anything
	// else is at least 1h. Default 8760h (a year).
	Retention time.Duration `env:"PORTALWATCH_ARCHIVE_RETENTION"`
	// MaxBytes caps the bytes of snapshots kept; past it the oldest are
	// deleted. Zero: no cap. Default 20 GiB.
	MaxBytes int64 `env:"PORTALWATCH_ARCHIVE_MAX_BYTES"`
	// Grace is how long records wait for their index before the sweep
	// may reclaim them (SweepConfig.Grace), at least 10m. Default 24h.
	Grace time.Duration `env:"PORTALWATCH_ARCHIVE_GRACE"`
	// SweepInterval is the pause between the processor's sweeps, at
	// least 1m. Default 1h.
	SweepInterval time.Duration `env:"PORTALWATCH_ARCHIVE_SWEEP_INTERVAL"`
	// ServeBytes caps a snapshot body the API sends, 1 KiB to 1 GiB.
	// Default 16 MiB.
	ServeBytes int64 `env:"PORTALWATCH_SNAPSHOT_MAX_BYTES"`
}

// DefaultDataDir is Config.DataDir's default.
const DefaultDataDir = "/var/lib/portalwatch"

// WithDefaults returns c with every unset field given its default;
// Enabled is set by the programs' defaults, not here.
func (c Config) WithDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.FileBytes == 0 {
		c.FileBytes = DefaultFileBytes
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = time.Hour
	}
	if c.ServeBytes == 0 {
		c.ServeBytes = 16 << 20
	}
	return c
}

// Defaults returns the programs' archive settings: on, kept a year,
// capped at 20 GiB.
func Defaults() Config {
	return Config{Enabled: true, Retention: 365 * 24 * time.Hour, MaxBytes: 20 << 30}.WithDefaults()
}

// Validate refuses what no default can mend.
func (c Config) Validate() error {
	var retention error
	if c.Retention != 0 && c.Retention < time.Hour {
		retention = config.Invalid("Retention", c.Retention, "want 0 (keep forever) or at least 1h, such as 8760h")
	}
	var dir error
	if !filepath.IsAbs(c.Directory()) {
		dir = config.Invalid("Dir", c.Directory(), "want an absolute path (PORTALWATCH_ARCHIVE_DIR, or PORTALWATCH_DATA_DIR under which it is archive/)")
	}
	return errors.Join(retention, dir,
		config.Between("FileBytes", c.FileBytes, 1<<20, 64<<30),
		config.AtLeast("MaxBytes", c.MaxBytes, 0),
		config.AtLeast("Grace", c.Grace, 10*time.Minute),
		config.AtLeast("SweepInterval", c.SweepInterval, time.Minute),
		config.Between("ServeBytes", c.ServeBytes, 1<<10, 1<<30),
	)
}

// Directory is the archive's directory: Dir, or DataDir/archive.
func (c Config) Directory() string {
	if c.Dir != "" {
		return c.Dir
	}
	return filepath.Join(c.DataDir, "archive")
}

// Sweep is the sweep's configuration.
func (c Config) Sweep() SweepConfig {
	return SweepConfig{Grace: c.Grace, Retention: c.Retention, MaxBytes: c.MaxBytes}
}

// Open returns the writer a program archives with under c, into a
// directory store, its files named with prefix and its warcinfo naming
// software; close seals its current file and closes the store, after the
// program stopped writing. Files are sealed well within the grace, so a
// sweep never seals one its writer still holds.
func Open(c Config, prefix, software string) (w *Writer, close func(context.Context) error, err error) {
	files, err := NewFS(c.Directory())
	if err != nil {
		return nil, nil, err
	}
	w = NewWriter(files, WriterConfig{Prefix: prefix, FileBytes: c.FileBytes, FileAge: min(DefaultFileAge, c.Grace/2), Software: software})
	return w, func(ctx context.Context) error { return errors.Join(w.Close(ctx), files.Close()) }, nil
}
