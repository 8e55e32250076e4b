/* global io, window, document, location, URLSearchParams, fetch */
/*
 * A minimal live view on the socket relay, as the frontend would build it: one websocket, cookies sent
 * by the browser, building subscriptions with acknowledgements, telemetry and notifications rendered
 * as they arrive. State is kept on `window.relay` for the test to read.
 */
(function () {
  const relayUrl = new URLSearchParams(location.search).get('relay');
  const statusEl = document.getElementById('status');
  const state = {
    status: 'connecting',
    connectError: null,
    acks: [],
    telemetry: [],
    notifications: [],
    disconnects: [],
  };

  const socket = io(relayUrl, { transports: ['websocket'], withCredentials: true, reconnection: false });

  function setStatus(status, detail) {
    state.status = status;
    statusEl.textContent = detail ? `${status}: ${detail}` : status;
    statusEl.className = status;
  }

  function cell(row, text) {
    const td = document.createElement('td');
    td.textContent = text;
    row.appendChild(td);
  }

  socket.on('connect', () => setStatus('connected'));
  socket.on('connect_error', (err) => {
    state.connectError = err.message;
    setStatus('rejected', err.message);
  });
  socket.on('disconnect', (reason) => {
    state.disconnects.push(reason);
    setStatus('disconnected', reason);
  });
  socket.on('telemetry', (reading) => {
    state.telemetry.push(reading);
    const row = document.createElement('tr');
    cell(row, String(reading.buildingId));
    cell(row, String(reading.roomId));
    cell(row, String(reading.type));
    cell(row, String(reading[reading.type]));
    document.querySelector('#telemetry tbody').appendChild(row);
  });
  socket.on('notification', (notification) => {
    state.notifications.push(notification);
    const li = document.createElement('li');
    li.dataset.id = notification.id;
    li.textContent = `[${notification.severity}] ${notification.title}: ${notification.message}`;
    document.getElementById('notifications').appendChild(li);
  });

  state.subscribe = async function (buildingId) {
    const ack = await socket.timeout(10000).emitWithAck('subscribe_building', buildingId);
    state.acks.push(ack);
    const li = document.createElement('li');
    li.dataset.building = buildingId;
    li.className = ack.subscribed ? 'subscribed' : 'refused';
    li.textContent = ack.subscribed ? `${buildingId}: live` : `${buildingId}: refused (${ack.reason})`;
    document.getElementById('subscriptions').appendChild(li);
    return ack;
  };

  state.unsubscribe = function (buildingId) {
    socket.emit('unsubscribe_building', buildingId);
    const li = document.querySelector(`#subscriptions li[data-building="${buildingId}"]`);
    if (li) li.remove();
  };

  // A credentialed cross-origin request to the relay's HTTP side (the polling handshake): the browser
  // only hands the answer to this page if the relay allows this origin with credentials.
  state.probeCors = async function () {
    try {
      const response = await fetch(`${relayUrl}/socket.io/?EIO=4&transport=polling`, { credentials: 'include' });
      return { ok: true, status: response.status, body: await response.text() };
    } catch (err) {
      return { ok: false, error: String(err) };
    }
  };

  state.close = function () {
    socket.close();
  };

  window.relay = state;
})();
