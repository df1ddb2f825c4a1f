//! storlab's lab: reproductions of published results beside the published
//! figures ([`studies`], [`report`]), parameter sweeps that split into
//! shards any job scheduler can run ([`sweep`]), and figures drawn as SVG
//! with their data as CSV ([`figure`]). Every number comes from the
//! simulator through [`measure`], the same path as `storlab sim`; the
//! [`sensitivity`] check finds rows that do not move with their device.
#![deny(missing_docs)]

pub mod approws;
pub mod error;
pub mod figure;
pub mod html;
pub mod measure;
mod perturb;
pub mod places;
pub mod report;
pub mod sensitivity;
pub mod studies;
pub mod sweep;
pub mod tablev;
pub mod verdicts;

pub use error::{LabError, Result};
pub use measure::{Plan, Run, RunId, Spec};
pub use report::{Class, Prepared, Reproduction, Row, Summary, Verdict};
