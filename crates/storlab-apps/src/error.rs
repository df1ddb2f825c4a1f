//! Why an application cannot run: [`AppError`], the error of every
//! application model, the registry and its parameters.

use storlab_sim::run::RunError;

/// Why an application cannot run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// No such application.
    #[error("{place}: no application named `{name}`; the applications are {known}")]
    Unknown {
        /// Where it was asked for.
        place: String,
        /// The name given.
        name: String,
        /// Every name.
        known: String,
    },
    /// No such parameter.
    #[error("{place}: application `{app}` has no parameter `{param}`; it takes {accepted}")]
    UnknownParam {
        /// Where.
        place: String,
        /// The application.
        app: String,
        /// The parameter given.
        param: String,
        /// What it takes.
        accepted: String,
    },
    /// A parameter's value is wrong.
    #[error("{place}: application `{app}`, parameter `{param}={value}`: {message}")]
    BadValue {
        /// Where.
        place: String,
        /// The application.
        app: String,
        /// The parameter.
        param: String,
        /// Its value.
        value: String,
        /// What is accepted.
        message: String,
    },
    /// A pair is not `name=value`.
    #[error("{place}: `{text}` is not name=value")]
    Syntax {
        /// Where.
        place: String,
        /// What was given.
        text: String,
    },
    /// The application cannot run on this system.
    #[error("application `{app}`: {message}")]
    Run {
        /// The application.
        app: String,
        /// Why.
        message: String,
    },
}

impl From<AppError> for RunError {
    fn from(e: AppError) -> Self {
        RunError::App(Box::new(e))
    }
}
