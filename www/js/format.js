// Time and size formatting shared by the pages (local time zone, 24-hour clock).
const pad = (n) => String(n).padStart(2, '0');

export const MIN = 60000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

export function hms(ms) {
	const d = new Date(ms);
	return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function hm(ms) {
	const d = new Date(ms);
	return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function ymd(ms) {
	const d = new Date(ms);
	return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

export function dateTime(ms) {
	return `${ymd(ms)} ${hms(ms)}`;
}

export function shortDate(ms) {
	return new Date(ms).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

export function localDayStart(ms) {
	const d = new Date(ms);
	d.setHours(0, 0, 0, 0);
	return d.getTime();
}

// "2026-11-30" (an <input type=date> value) -> local midnight in ms, or NaN.
export function parseDay(s) {
	const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s || '');
	return m ? new Date(+m[1], +m[2] - 1, +m[3]).getTime() : NaN;
}

// <input type=datetime-local> value <-> ms
export function parseLocal(s) {
	const t = s ? new Date(s).getTime() : NaN;
	return Number.isFinite(t) ? t : NaN;
}

export function toLocalInput(ms) {
	const d = new Date(ms);
	return `${ymd(ms)}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function duration(ms) {
	if (ms < MIN)
		return `${Math.round(ms / 1000)} s`;
	if (ms < HOUR)
		return `${Math.round(ms / MIN)} min`;
	return `${(ms / HOUR).toFixed(ms < 10 * HOUR ? 1 : 0)} h`;
}

export function el(tag, attrs, ...children) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false)
			continue;
		if (k === 'class')
			e.className = v;
		else if (k === 'text')
			e.textContent = v;
		else if (k === 'style')
			e.style.cssText = v; /* through the CSSOM: the pages' CSP refuses style attributes */
		else if (k.startsWith('on'))
			e.addEventListener(k.slice(2), v);
		else
			e.setAttribute(k, v === true ? '' : v);
	}
	for (const c of children)
		if (c !== undefined && c !== null && c !== false)
			e.append(c);
	return e;
}
