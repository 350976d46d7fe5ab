//! `Delivery`: which outputs each stream gets, segment durations and ABR groups, per app
//! and per stream. Old files put these under `RtmpSettings`; [`from_rtmp`] translates
//! them, and a `Delivery` key, when present, replaces that translation whole (see the
//! schema in [`super`]).

use super::super::error::FieldError;
use super::fields::{check_media_name, each, in_range, unique};
use serde::Deserialize;
use std::ops::RangeInclusive;
use strom_ipc::rules::{
    AbrGroup, AppDelivery, DashAddressing, DeliveryOutput, DeliverySettings, RtmpSettings,
    StreamDelivery, StreamRef,
};

/// Segment durations, in seconds (also `RtmpSettings.duration`).
pub(super) const DURATION_SECS: RangeInclusive<u32> = 1..=60;
/// LL-HLS part targets, in milliseconds (a part longer than a second defeats the point).
const PART_TARGET_MS: RangeInclusive<u32> = 100..=1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDelivery {
    outputs: Option<Vec<String>>,
    segment_duration_secs: Option<u32>,
    part_target_ms: Option<u32>,
    dash_segment_addressing: Option<String>,
    #[serde(default)]
    apps: Vec<RawAppDelivery>,
    #[serde(default)]
    streams: Vec<RawStreamDelivery>,
    #[serde(default)]
    abr: Vec<RawAbr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAppDelivery {
    app: String,
    outputs: Option<Vec<String>>,
    segment_duration_secs: Option<u32>,
    dash_segment_addressing: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStreamDelivery {
    app: String,
    stream: String,
    outputs: Option<Vec<String>>,
    segment_duration_secs: Option<u32>,
    dash_segment_addressing: Option<String>,
}

impl RawDelivery {
    pub(super) fn validate(self) -> Result<DeliverySettings, FieldError> {
        let defaults = DeliverySettings::default();
        let apps = each(self.apps, "apps", |raw| {
            check_media_name("app", &raw.app)?;
            Ok(AppDelivery {
                app: raw.app,
                outputs: optional_outputs(raw.outputs)?,
                segment_duration_secs: optional_duration(raw.segment_duration_secs)?,
                dash_segment_addressing: optional_addressing(raw.dash_segment_addressing)?,
            })
        })?;
        unique(&apps, "apps", "app", |a| a.app.clone())?;
        let streams = each(self.streams, "streams", |raw| {
            check_media_name("app", &raw.app)?;
            check_media_name("stream", &raw.stream)?;
            Ok(StreamDelivery {
                app: raw.app,
                stream: raw.stream,
                outputs: optional_outputs(raw.outputs)?,
                segment_duration_secs: optional_duration(raw.segment_duration_secs)?,
                dash_segment_addressing: optional_addressing(raw.dash_segment_addressing)?,
            })
        })?;
        unique(&streams, "streams", "stream", |s| {
            format!("{}/{}", s.app, s.stream)
        })?;
        let abr = each(self.abr, "abr", RawAbr::validate)?;
        unique(&abr, "abr", "stream", |g| format!("{}/{}", g.app, g.stream))?;
        Ok(DeliverySettings {
            outputs: optional_outputs(self.outputs)?.unwrap_or(defaults.outputs),
            segment_duration_secs: optional_duration(self.segment_duration_secs)?
                .unwrap_or(defaults.segment_duration_secs),
            part_target_ms: self
                .part_target_ms
                .map(|ms| in_range("part_target_ms", ms, PART_TARGET_MS))
                .transpose()?
                .unwrap_or(defaults.part_target_ms),
            dash_segment_addressing: optional_addressing(self.dash_segment_addressing)?
                .unwrap_or(defaults.dash_segment_addressing),
            apps,
            streams,
            abr,
        })
    }
}

/// The delivery an old file means by its `RtmpSettings`: its protocols (less `RTMP`,
/// which is playback over the RTMP listener), chunk durations and ABR groups.
pub(super) fn from_rtmp(rtmp: &RtmpSettings) -> DeliverySettings {
    let outputs = |protocols: &[strom_ipc::rules::OutputProtocol]| -> Vec<DeliveryOutput> {
        protocols
            .iter()
            .filter_map(|p| DeliveryOutput::from_protocol(*p))
            .collect()
    };
    DeliverySettings {
        outputs: outputs(&rtmp.protocols),
        segment_duration_secs: rtmp.duration,
        part_target_ms: DeliverySettings::default().part_target_ms,
        dash_segment_addressing: DashAddressing::default(),
        apps: rtmp
            .apps
            .iter()
            .filter(|app| app.protocols.is_some() || app.duration.is_some())
            .map(|app| AppDelivery {
                app: app.app.clone(),
                outputs: app.protocols.as_deref().map(outputs),
                segment_duration_secs: app.duration,
                dash_segment_addressing: None,
            })
            .collect(),
        streams: Vec::new(),
        abr: rtmp.abr.clone(),
    }
}

/// `dash_segment_addressing`: `"timeline"` or `"number"`.
fn optional_addressing(value: Option<String>) -> Result<Option<DashAddressing>, FieldError> {
    value
        .map(|name| match name.as_str() {
            "timeline" => Ok(DashAddressing::Timeline),
            "number" => Ok(DashAddressing::Number),
            other => Err(FieldError::new(
                "dash_segment_addressing",
                format!("unknown addressing {other:?}; expected timeline, number"),
            )),
        })
        .transpose()
}

fn optional_duration(value: Option<u32>) -> Result<Option<u32>, FieldError> {
    value
        .map(|d| in_range("segment_duration_secs", d, DURATION_SECS))
        .transpose()
}

fn optional_outputs(names: Option<Vec<String>>) -> Result<Option<Vec<DeliveryOutput>>, FieldError> {
    let Some(names) = names else {
        return Ok(None);
    };
    let mut outputs = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let at = format!("outputs[{i}]");
        let Some(output) = DeliveryOutput::from_name(name) else {
            let known: Vec<&str> = DeliveryOutput::ALL.iter().map(|o| o.as_str()).collect();
            let message = format!("unknown output {name:?}; expected {}", known.join(", "));
            return Err(FieldError::new(at, message));
        };
        if outputs.contains(&output) {
            return Err(FieldError::new(at, format!("{name:?} is listed twice")));
        }
        outputs.push(output);
    }
    Ok(Some(outputs))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAbr {
    app: String,
    stream: String,
    streams: Vec<RawStreamRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStreamRef {
    app: String,
    stream: String,
}

impl RawAbr {
    pub(super) fn validate(self) -> Result<AbrGroup, FieldError> {
        check_media_name("app", &self.app)?;
        check_media_name("stream", &self.stream)?;
        if self.streams.is_empty() {
            return Err(FieldError::new("streams", "must list at least one stream"));
        }
        let streams = each(self.streams, "streams", |raw| {
            check_media_name("app", &raw.app)?;
            check_media_name("stream", &raw.stream)?;
            Ok(StreamRef {
                app: raw.app,
                stream: raw.stream,
            })
        })?;
        if let Some(i) = streams
            .iter()
            .position(|s| s.app == self.app && s.stream == self.stream)
        {
            let message = "the ABR stream cannot be one of its own renditions";
            return Err(FieldError::new(format!("streams[{i}]"), message));
        }
        unique(&streams, "streams", "stream", |s| {
            format!("{}/{}", s.app, s.stream)
        })?;
        Ok(AbrGroup {
            app: self.app,
            stream: self.stream,
            streams,
        })
    }
}
