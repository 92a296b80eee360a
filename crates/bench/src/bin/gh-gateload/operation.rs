//! What one operation is (`Kind`), the mix of them a run sends (`Mix`), and what one came
//! to (`Outcome`).

/// What one operation is, and so what its answer must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Allowed,
    Refused,
    Asked,
    List,
    Read,
}

impl Kind {
    pub(crate) const ALL: [Kind; 5] = [
        Kind::Allowed,
        Kind::Refused,
        Kind::Asked,
        Kind::List,
        Kind::Read,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Allowed => "allowed",
            Kind::Refused => "refused",
            Kind::Asked => "asked",
            Kind::List => "list",
            Kind::Read => "read",
        }
    }

    /// Is it a `tools/call`, and so a decision of the gateway's (a ledger line)?
    pub(crate) fn decides(self) -> bool {
        matches!(self, Kind::Allowed | Kind::Refused | Kind::Asked)
    }
}

/// The mix: each kind's share, spread evenly over the operations' sequence.
pub(crate) struct Mix {
    /// One entry per share point, in an order that interleaves the kinds.
    pub(crate) wheel: Vec<Kind>,
}

impl Mix {
    pub(crate) fn parse(text: &str) -> anyhow::Result<Mix> {
        let mut weights = Vec::new();
        for part in text.split(',').filter(|p| !p.is_empty()) {
            let (name, n) = part
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--mix {part:?}: expected KIND=WEIGHT"))?;
            let kind = Kind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| {
                    anyhow::anyhow!("--mix: no kind {name:?} (allowed, refused, asked, list, read)")
                })?;
            let n: usize = n
                .parse()
                .ok()
                .filter(|n| *n <= 1_000)
                .ok_or_else(|| anyhow::anyhow!("--mix {part:?}: a weight is 0 to 1000"))?;
            weights.push((kind, n));
        }
        let total: usize = weights.iter().map(|(_, n)| n).sum();
        if total == 0 {
            anyhow::bail!("--mix {text:?} has no operation");
        }
        // Smooth weighted round robin: each kind comes as evenly spaced as its share allows.
        let mut credit = vec![0i64; weights.len()];
        let mut wheel = Vec::with_capacity(total);
        for _ in 0..total {
            for (c, (_, n)) in credit.iter_mut().zip(&weights) {
                *c += *n as i64;
            }
            let best = (0..weights.len()).max_by_key(|&i| (credit[i], -(i as i64)));
            let best = best.expect("at least one kind");
            credit[best] -= total as i64;
            wheel.push(weights[best].0);
        }
        Ok(Mix { wheel })
    }

    pub(crate) fn kind(&self, k: usize) -> Kind {
        self.wheel[k % self.wheel.len()]
    }
}

/// What one operation came to.
pub(crate) enum Outcome {
    Expected,
    Unexpected(String),
}
