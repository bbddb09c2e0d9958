//! Host figures for heartbeats, read from `/proc` and `statvfs(2)`: load, CPU, memory, disk,
//! uptime. Parsing is pure and unit-tested; reading is blocking and runs off the reactor.
//!
//! Invariant: a figure that cannot be read is `None`, never a made-up zero.

use crate::agents::protocol::HostMetrics;

/// Cumulative CPU time from the first line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

/// Keeps the previous CPU reading: a busy percentage needs two.
#[derive(Debug, Default)]
pub struct Sampler {
    previous: Option<CpuTimes>,
}

impl Sampler {
    /// Reads every figure now (blocking: call it on a blocking thread).
    pub fn sample(&mut self) -> HostMetrics {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let load = read("/proc/loadavg").and_then(|text| parse_loadavg(&text));
        let (memory_total, memory_available) = read("/proc/meminfo")
            .map(|text| parse_meminfo(&text))
            .unwrap_or((None, None));
        let cpu = read("/proc/stat").and_then(|text| parse_cpu(&text));
        let cpu_percent = match (self.previous, cpu) {
            (Some(before), Some(now)) => cpu_percent(before, now),
            _ => None,
        };
        self.previous = cpu.or(self.previous);
        let (disk_total, disk_available) = disk_of_root();
        HostMetrics {
            load1: load.map(|l| l.0),
            load5: load.map(|l| l.1),
            load15: load.map(|l| l.2),
            cpu_percent,
            memory_total_bytes: memory_total,
            memory_available_bytes: memory_available,
            disk_total_bytes: disk_total,
            disk_available_bytes: disk_available,
            uptime_seconds: read("/proc/uptime").and_then(|text| parse_uptime(&text)),
        }
    }
}

fn disk_of_root() -> (Option<u64>, Option<u64>) {
    match rustix::fs::statvfs("/") {
        Ok(stat) => (
            Some(stat.f_blocks.saturating_mul(stat.f_frsize)),
            Some(stat.f_bavail.saturating_mul(stat.f_frsize)),
        ),
        Err(_) => (None, None),
    }
}

/// `/proc/loadavg`: `0.52 0.58 0.59 1/467 12345`.
pub fn parse_loadavg(text: &str) -> Option<(f64, f64, f64)> {
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some((
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ))
}

/// `/proc/meminfo`: `MemTotal` and `MemAvailable`, given in kB, returned in bytes.
pub fn parse_meminfo(text: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kib| kib.saturating_mul(1024))
    };
    (field("MemTotal"), field("MemAvailable"))
}

/// `/proc/uptime`: seconds since boot, then idle seconds.
pub fn parse_uptime(text: &str) -> Option<u64> {
    let seconds: f64 = text.split_whitespace().next()?.parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then_some(seconds as u64)
}

/// The aggregate `cpu` line of `/proc/stat`; idle and iowait count as not busy.
pub fn parse_cpu(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|line| line.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|value| value.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let total: u64 = values.iter().take(8).sum();
    let idle = values.get(3)? + values.get(4).copied().unwrap_or(0);
    Some(CpuTimes {
        busy: total.saturating_sub(idle),
        total,
    })
}

/// Busy share between two readings, in percent; `None` when no time passed.
pub fn cpu_percent(before: CpuTimes, now: CpuTimes) -> Option<f64> {
    let total = now.total.checked_sub(before.total)?;
    let busy = now.busy.checked_sub(before.busy)?;
    (total > 0).then(|| (busy as f64 * 100.0 / total as f64).min(100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        assert_eq!(
            parse_loadavg("0.52 0.58 0.59 1/467 12345\n"),
            Some((0.52, 0.58, 0.59))
        );
        assert_eq!(parse_loadavg("garbage"), None);
        let meminfo = "MemTotal:       16314856 kB\nMemFree:  1 kB\nMemAvailable:   8000000 kB\n";
        assert_eq!(
            parse_meminfo(meminfo),
            (Some(16314856 * 1024), Some(8000000 * 1024))
        );
        assert_eq!(parse_meminfo(""), (None, None));
        assert_eq!(parse_uptime("12345.67 54321.00\n"), Some(12345));
        assert_eq!(parse_uptime("-1 0"), None);
    }

    #[test]
    fn cpu_share_comes_from_two_readings() {
        let first = parse_cpu("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(
            first,
            CpuTimes {
                busy: 200,
                total: 1000
            }
        );
        let second = parse_cpu("cpu  150 0 150 800 100 0 0 0 0 0\n").unwrap();
        assert_eq!(cpu_percent(first, second), Some(50.0));
        assert_eq!(cpu_percent(first, first), None);
        assert_eq!(parse_cpu("intr 1 2 3"), None);
    }

    #[test]
    fn this_host_reports_something() {
        let mut sampler = Sampler::default();
        let metrics = sampler.sample();
        assert!(metrics.memory_total_bytes.is_some_and(|bytes| bytes > 0));
        assert!(metrics.disk_total_bytes.is_some_and(|bytes| bytes > 0));
    }
}
