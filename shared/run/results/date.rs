//! Dates for the records: the current time as RFC 3339, from the Unix clock, without a calendar
//! dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time, UTC, as RFC 3339 with whole seconds: `2025-11-21T04:26:07Z`.
pub fn utc_now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339_from_unix(secs as i64)
}

/// Seconds since 1970-01-01T00:00:00Z → RFC 3339 (proleptic Gregorian calendar, UTC).
pub fn rfc3339_from_unix(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let in_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), by walking whole years and then months.
/// A timestamp is a few decades from 1970, so the walk is short.
fn civil_date(days_since_epoch: i64) -> (i64, u32, u32) {
    fn is_leap(year: i64) -> bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }
    fn year_days(year: i64) -> i64 {
        if is_leap(year) {
            366
        } else {
            365
        }
    }
    let mut year = 1970;
    let mut day = days_since_epoch;
    while day < 0 {
        year -= 1;
        day += year_days(year);
    }
    while day >= year_days(year) {
        day -= year_days(year);
        year += 1;
    }
    let february = if is_leap(year) { 29 } else { 28 };
    let lengths = [31, february, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut month = 0;
    while day >= lengths[month] {
        day -= lengths[month];
        month += 1;
    }
    (year, month as u32 + 1, day as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_known_timestamps() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(rfc3339_from_unix(1_234_567_890), "2009-02-13T23:31:30Z");
        assert_eq!(rfc3339_from_unix(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339_from_unix(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(rfc3339_from_unix(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(-1), "1969-12-31T23:59:59Z");
        let now = utc_now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_previous() {
        let mut prev = civil_date(-1);
        for day in 0..146_097 {
            let (y, m, d) = civil_date(day);
            let (py, pm, pd) = prev;
            let next_day = (y, m, d) == (py, pm, pd + 1);
            let next_month = d == 1 && ((y, m) == (py, pm + 1) || (y, m, pm) == (py + 1, 1, 12));
            assert!(next_day || next_month, "{prev:?} then {:?}", (y, m, d));
            prev = (y, m, d);
        }
    }
}
