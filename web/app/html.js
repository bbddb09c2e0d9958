// The one way views write markup: htm's tagged templates bound to Preact, no compile step.
import { h, Fragment } from "preact";
import htm from "htm";

export const html = htm.bind(h);
export { Fragment };
