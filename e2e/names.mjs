// The page's names for what it draws, as the project exports them (protocol/names.json, made
// from the Rust enums by protocol/tests/names.rs): each heatmap's `data-figure`, each stepper
// button's `data-stage`. Tests find figures and stages by these, never by caption or label text.
// A name the page does not have throws at once, rather than waiting for an element that never comes.
import fs from 'node:fs';

const exported = JSON.parse(fs.readFileSync(new URL('../protocol/names.json', import.meta.url), 'utf8'));
const FIGURES = new Set(exported.figures.map((f) => f.name));
const STAGES = new Set(exported.stages);

function known(set, kind, name) {
  if (!set.has(name)) throw new Error(`no ${kind} "${name}" in protocol/names.json`);
  return name;
}

/// `name`, when it is a figure's name.
export const figureName = (name) => known(FIGURES, 'figure', name);

/// `name`, when it is a stage's name.
export const stageName = (name) => known(STAGES, 'stage', name);

/// The CSS selector of the heatmap named `name` (its `data-figure`).
export const figure = (name) => `figure.heatmap[data-figure="${figureName(name)}"]`;

/// The CSS selector of the stepper's button for stage `name` (its `data-stage`).
export const stage = (name) => `.stepper .step[data-stage="${stageName(name)}"]`;

/// The CSS selector of the stepper's current stage's button.
export const CURRENT_STAGE = '.stepper .step[aria-current="step"]';
