//! The OTLP exporter: started from OpenTelemetry's own environment variables, spans sent
//! in batches over HTTP (protobuf) from a thread of its own, and at the end a count of
//! what reached the collector, so a wrong endpoint is said rather than silent.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    trace::{SdkTracerProvider, SpanData, SpanExporter},
};

use super::{ChosenIds, TRACER};

/// How long the spans still queued at exit may take to reach the collector.
pub const FLUSH_AT_EXIT: Duration = Duration::from_secs(5);
/// Most characters of an export error kept for the report.
const MAX_ERROR_CHARS: usize = 300;

/// Why telemetry could not start: the environment asked for something Gatehouse does
/// not do, or named an endpoint that is not one.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `OTEL_TRACES_EXPORTER` names an exporter other than `otlp` or `none`.
    #[error("OTEL_TRACES_EXPORTER={0}: Gatehouse sends traces with 'otlp' (or 'none')")]
    Exporter(String),
    /// The protocol is not OTLP over HTTP with protobuf.
    #[error(
        "{variable}={value}: Gatehouse sends OTLP over HTTP (http/protobuf); point the \
         endpoint at the collector's OTLP/HTTP port (4318 by default)"
    )]
    Protocol {
        /// The variable that says it.
        variable: &'static str,
        /// What it says.
        value: String,
    },
    /// The endpoint is not an http(s) URL.
    #[error("{variable}: {why}")]
    Endpoint {
        /// The variable that names it (its value may hold credentials: not repeated).
        variable: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The exporter could not be built.
    #[error("the OTLP exporter could not start: {0}")]
    Build(String),
    /// A process starts one exporter.
    #[error("the OTLP exporter is already started")]
    Started,
}

/// The running exporter. [`Exporter::finish`] sends what is queued and says how it went.
pub struct Exporter {
    provider: SdkTracerProvider,
    delivery: Arc<Delivery>,
}

/// What reached the collector, and the last reason something did not.
#[derive(Debug, Default)]
pub struct Delivery {
    sent: AtomicU64,
    lost: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Delivery {
    /// Spans the collector accepted.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Spans that did not reach it.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// Why the last batch that did not reach it failed.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The environment's value of `name`, when set and not empty.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Exporter {
    /// Start sending spans if the environment names a collector
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_EXPORTER_OTLP_ENDPOINT` with
    /// `/v1/traces` added); none otherwise, or when `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`. The service is named `service` unless
    /// `OTEL_SERVICE_NAME` says otherwise; headers, timeout, compression and the batch's
    /// bounds are read by the OpenTelemetry SDK from their own variables.
    pub fn start(service: &'static str) -> Result<Option<Exporter>, TelemetryError> {
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        match var("OTEL_TRACES_EXPORTER").as_deref() {
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(other) => return Err(TelemetryError::Exporter(other.to_owned())),
        }
        let Some((variable, endpoint)) = [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ]
        .into_iter()
        .find_map(|v| var(v).map(|value| (v, value))) else {
            return Ok(None);
        };
        check_endpoint(variable, &endpoint)?;
        for variable in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            match var(variable) {
                None => continue,
                Some(p) if p == "http/protobuf" => break,
                Some(value) => return Err(TelemetryError::Protocol { variable, value }),
            }
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| TelemetryError::Build(e.to_string()))?;
        let delivery = Arc::new(Delivery::default());
        let counted = Counted {
            inner: exporter,
            delivery: delivery.clone(),
        };
        let mut resource = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ));
        if var("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(service);
        }
        let provider = SdkTracerProvider::builder()
            .with_id_generator(ChosenIds::default())
            .with_resource(resource.build())
            .with_batch_exporter(counted)
            .build();
        TRACER
            .set(provider.tracer("gatehouse"))
            .map_err(|_| TelemetryError::Started)?;
        Ok(Some(Exporter { provider, delivery }))
    }

    /// Send the spans still queued (waiting at most [`FLUSH_AT_EXIT`]) and stop; what
    /// reached the collector.
    pub fn finish(self) -> Arc<Delivery> {
        if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_AT_EXIT) {
            self.delivery.failed(0, &e.to_string());
        }
        self.delivery
    }
}

/// An endpoint is an http or https URL.
fn check_endpoint(variable: &'static str, endpoint: &str) -> Result<(), TelemetryError> {
    let why = match reqwest::Url::parse(endpoint) {
        Err(e) => format!("not a URL ({e})"),
        Ok(url) if !matches!(url.scheme(), "http" | "https") => {
            format!(
                "a {} URL; the collector is reached over http or https",
                url.scheme()
            )
        }
        Ok(url) if url.host_str().is_none() => "a URL with no host".into(),
        Ok(_) => return Ok(()),
    };
    Err(TelemetryError::Endpoint { variable, why })
}

impl Delivery {
    fn failed(&self, spans: u64, why: &str) {
        self.lost.fetch_add(spans, Ordering::Relaxed);
        let why = crate::text::clip(why, MAX_ERROR_CHARS).into_owned();
        *self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
    }
}

/// The OTLP exporter, counting what it delivered.
#[derive(Debug)]
struct Counted {
    inner: opentelemetry_otlp::SpanExporter,
    delivery: Arc<Delivery>,
}

impl SpanExporter for Counted {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let sent = self.inner.export(batch).await;
        match &sent {
            Ok(()) => {
                self.delivery.sent.fetch_add(spans, Ordering::Relaxed);
            }
            Err(e) => self.delivery.failed(spans, &e.to_string()),
        }
        sent
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
