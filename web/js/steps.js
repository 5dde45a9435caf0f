// The step a chart of a window is drawn in: hours up to a week (a one-day
// window is 24 points, not a single dot uPlot spreads over years), days
// beyond. win is the API's window parameter, as the picker makes it.
const HOURLY = ['today', 'yesterday', 'week', 'lastweek'];

export function windowDays(win) {
	const m = /^([^,]+),([^,]+)$/.exec(win || '');
	if (m) return (Date.parse(m[2]) - Date.parse(m[1])) / 86400e3;
	if (HOURLY.includes(win)) return win === 'today' || win === 'yesterday' ? 1 : 7;
	return 31; // month, lastmonth
}

export function stepFor(win) {
	return windowDays(win) <= 7 ? 'hour' : 'day';
}
