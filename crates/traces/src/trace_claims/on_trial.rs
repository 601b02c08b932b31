//! A trial of a trace with what the lab's relations know of its ops' calls: each op issued by
//! a call that blocks nothing, labelled, free where its stream was idle when it was issued.

use crate::judge::relation::HostWaits;
use crate::trace::Trial;

pub(super) struct OnTrial<'a> {
    trial: &'a Trial,
    pub(super) waits: HostWaits,
}

impl<'a> OnTrial<'a> {
    pub(super) fn new(trial: &'a Trial) -> OnTrial<'a> {
        let waits = HostWaits::listed(trial.labels.iter().cloned());
        OnTrial { trial, waits }
    }
}

impl std::ops::Deref for OnTrial<'_> {
    type Target = Trial;
    fn deref(&self) -> &Trial {
        self.trial
    }
}
